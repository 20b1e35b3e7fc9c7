"""Typed routing: params validated into models, typed calls and notifications."""

from __future__ import annotations

import logging
from types import MappingProxyType

import anyio
import pytest
from pydantic import BaseModel, ConfigDict, Field

from muse_acp.rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    JsonObject,
    NotificationRoute,
    RequestContext,
    RequestRoute,
    Result,
    Router,
    RpcError,
    call,
)

from .harness import WAIT, SampleResult, connected, serving

pytestmark = pytest.mark.anyio


class PromptParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(alias="sessionId")
    text: str = ""


class NoParams(BaseModel):
    pass


class Recorder:
    def __init__(self) -> None:
        self.prompts: list[tuple[PromptParams, RequestContext]] = []
        self.updates: list[PromptParams] = []

    async def prompt(self, params: PromptParams, ctx: RequestContext) -> Result:
        self.prompts.append((params, ctx))
        return SampleResult(stop_reason="end_turn")

    async def ping(self, params: NoParams, ctx: RequestContext) -> Result:
        return {}

    async def update(self, params: PromptParams) -> None:
        self.updates.append(params)

    def router(self) -> Router:
        return Router(
            [
                RequestRoute("session/prompt", PromptParams, self.prompt),
                RequestRoute("ping", NoParams, self.ping),
            ],
            [NotificationRoute("session/update", PromptParams, self.update)],
        )


def test_duplicate_methods_are_refused_at_construction() -> None:
    recorder = Recorder()
    with pytest.raises(ValueError, match="duplicate request route for ping"):
        Router([RequestRoute("ping", NoParams, recorder.ping)] * 2)
    with pytest.raises(ValueError, match="duplicate notification route for u"):
        Router(notifications=[NotificationRoute("u", PromptParams, recorder.update)] * 2)


def test_route_tables_are_read_only() -> None:
    router = Recorder().router()
    assert isinstance(router.requests, MappingProxyType)
    assert isinstance(router.notifications, MappingProxyType)
    assert set(router.requests) == {"session/prompt", "ping"}
    assert set(router.notifications) == {"session/update"}
    with pytest.raises(TypeError):
        router.requests["x"] = router.requests["ping"]  # type: ignore[index]


async def test_a_request_reaches_its_handler_as_a_validated_model() -> None:
    recorder = Recorder()
    async with serving(recorder.router()) as (_, peer):
        params = {"sessionId": "s-1", "text": "hi"}
        await peer.send_json(
            {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": params}
        )
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": 3,
            "result": {"stopReason": "end_turn"},
        }
        await peer.send_json({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 4, "result": {}}
    [(model, ctx)] = recorder.prompts
    assert model == PromptParams(sessionId="s-1", text="hi")
    assert ctx == RequestContext(request_id=3, method="session/prompt", arrival=1)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"session_id": "s"}, "invalid params for session/prompt: sessionId is required"),
        ({"sessionId": "s", "x": 1}, "invalid params for session/prompt: x is not allowed"),
        ([1, 2], "invalid params for session/prompt: params must be an object"),
        ("s", "invalid params for session/prompt: params must be an object"),
        (None, "invalid params for session/prompt: sessionId is required"),
    ],
)
async def test_invalid_params_are_answered_with_our_own_short_message(
    params: object, message: str
) -> None:
    recorder = Recorder()
    async with serving(recorder.router()) as (_, peer):
        request: JsonObject = {"jsonrpc": "2.0", "id": 1, "method": "session/prompt"}
        if params is not None:
            request["params"] = params  # type: ignore[assignment]
        await peer.send_json(request)
        answer = await peer.receive()
    assert answer["error"] == {"code": INVALID_PARAMS, "message": message}
    assert recorder.prompts == []


@pytest.mark.parametrize("method", ["session/unknown", "_vendor/extension", "session/update"])
async def test_requests_without_a_route_are_method_not_found(method: str) -> None:
    async with serving(Recorder().router()) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": method})
        answer = await peer.receive()
    assert answer["error"] == {
        "code": METHOD_NOT_FOUND,
        "message": f"unknown method {method}",
        "data": {"method": method},
    }


async def test_notifications_are_validated_and_bad_or_unknown_ones_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = Recorder()
    async with serving(recorder.router()) as (_, peer):
        with caplog.at_level(logging.DEBUG, logger="muse_acp.rpc"):
            for params in ({"sessionId": "a"}, {"nope": 1}, 7, {"sessionId": "b", "text": "t"}):
                await peer.send_json(
                    {"jsonrpc": "2.0", "method": "session/update", "params": params}
                )
            await peer.send_json({"jsonrpc": "2.0", "method": "_vendor/note"})
            await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "ping"})
            await peer.receive()
    assert [update.session_id for update in recorder.updates] == ["a", "b"]
    assert "session/update: sessionId is required" in caplog.text
    assert "session/update: params must be an object" in caplog.text
    assert "ignored notification _vendor/note" in caplog.text


async def test_call_validates_the_result_into_the_given_model() -> None:
    async with connected(Router(), Recorder().router()) as (client, _):
        with anyio.fail_after(WAIT):
            result = await call(client, "session/prompt", PromptParams(sessionId="s"), SampleResult)
            empty = await call(client, "ping", None, NoParams)
    assert result == SampleResult(stop_reason="end_turn")
    assert empty == NoParams()


async def test_call_accepts_a_null_result_as_an_empty_object() -> None:
    async with serving(Router()) as (conn, peer), anyio.create_task_group() as tg:
        results: list[NoParams] = []

        async def run() -> None:
            results.append(await call(conn, "x", None, NoParams))

        tg.start_soon(run)
        await peer.receive()
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "result": None})
    assert results == [NoParams()]


async def test_call_turns_a_malformed_result_into_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    errors: list[RpcError] = []
    # The whole exchange: the caller reads the answer, and logs, after the peer has sent it.
    with caplog.at_level(logging.WARNING, logger="muse_acp.rpc"):
        async with serving(Router()) as (conn, peer), anyio.create_task_group() as tg:

            async def run() -> None:
                with pytest.raises(RpcError) as caught:
                    await call(conn, "session/prompt", None, SampleResult)
                errors.append(caught.value)

            tg.start_soon(run)
            await peer.receive()
            await peer.send_json({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": 3}})
    [error] = errors
    assert error.to_object() == {
        "code": INTERNAL_ERROR,
        "message": "invalid result for session/prompt: stopReason has the wrong type",
    }
    assert "invalid result for session/prompt" in caplog.text


async def test_a_notified_model_reaches_the_typed_route() -> None:
    recorder = Recorder()
    async with connected(Router(), recorder.router()) as (client, _):
        with anyio.fail_after(WAIT):
            await client.notify("session/update", PromptParams(sessionId="z"))
            await call(client, "ping", None, NoParams)
    assert recorder.updates == [PromptParams(sessionId="z")]
