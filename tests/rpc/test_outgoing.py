"""Requests and notifications a connection sends, and how their outcomes reach the caller."""

from __future__ import annotations

import logging

import anyio
import pytest
from anyio.lowlevel import checkpoint

from muse_acp.rpc import (
    INTERNAL_ERROR,
    Connection,
    ConnectionClosed,
    FrameReader,
    FrameWriter,
    JsonInput,
    JsonObject,
    JsonValue,
    RequestContext,
    Result,
    RpcError,
)

from .harness import WAIT, SampleResult, ScriptedHandler, connected, memory_pair, serving

pytestmark = pytest.mark.anyio


class Outcome:
    """Collects what a request task returned or raised."""

    def __init__(self) -> None:
        self.result: JsonValue = None
        self.error: BaseException | None = None
        self.done = anyio.Event()

    async def run(self, conn: Connection, method: str, params: JsonInput = None) -> None:
        try:
            self.result = await conn.request(method, params)
        except (RpcError, ConnectionClosed) as exc:
            self.error = exc
        finally:
            self.done.set()

    async def wait(self) -> None:
        with anyio.fail_after(WAIT):
            await self.done.wait()


async def test_requests_are_numbered_from_one_and_resolve_with_the_raw_result() -> None:
    async with serving(ScriptedHandler()) as (conn, peer), anyio.create_task_group() as tg:
        first, second = Outcome(), Outcome()
        tg.start_soon(first.run, conn, "session/new", {"cwd": "/w"})
        tg.start_soon(second.run, conn, "model/list")
        sent = [await peer.receive(), await peer.receive()]
        assert sent == [
            {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w"}},
            {"jsonrpc": "2.0", "id": 2, "method": "model/list"},
        ]
        await peer.send_json({"jsonrpc": "2.0", "id": 2, "result": [1]})
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}})
        await first.wait()
        await second.wait()
    assert (first.result, second.result) == ({"sessionId": "s"}, [1])


async def test_the_first_request_id_is_configurable_and_models_are_sent_by_alias() -> None:
    handler = ScriptedHandler()
    async with (
        serving(handler, first_request_id=100) as (conn, peer),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(conn.request, "m", SampleResult(stop_reason="end_turn"))
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "id": 100,
            "method": "m",
            "params": {"stopReason": "end_turn"},
        }
        await peer.send_json({"jsonrpc": "2.0", "id": 100, "result": None})


async def test_an_error_response_is_raised_to_the_caller() -> None:
    async with serving(ScriptedHandler()) as (conn, peer), anyio.create_task_group() as tg:
        outcome = Outcome()
        tg.start_soon(outcome.run, conn, "session/load")
        await peer.receive()
        error: JsonObject = {
            "code": -32020,
            "message": "session was not found",
            "data": {"kind": "x"},
        }
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "error": error})
        await outcome.wait()
    assert isinstance(outcome.error, RpcError)
    assert outcome.error.to_object() == error


@pytest.mark.parametrize(
    "response",
    [
        {"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1, "message": "m"}},
        {"jsonrpc": "1.0", "id": 1, "result": 1},
        {"id": 1, "result": 1},
    ],
)
async def test_a_malformed_response_fails_the_caller_with_an_internal_error(
    response: JsonValue,
) -> None:
    async with serving(ScriptedHandler()) as (conn, peer), anyio.create_task_group() as tg:
        outcome = Outcome()
        tg.start_soon(outcome.run, conn, "m")
        await peer.receive()
        await peer.send_json(response)
        await outcome.wait()
    assert isinstance(outcome.error, RpcError)
    assert outcome.error.to_object() == {
        "code": INTERNAL_ERROR,
        "message": "malformed response to m",
    }


async def test_responses_nobody_waits_for_are_logged_and_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving(ScriptedHandler()) as (conn, peer), anyio.create_task_group() as tg:
        with caplog.at_level(logging.WARNING, logger="muse_acp.rpc"):
            await peer.send_json({"jsonrpc": "2.0", "id": 41, "result": {}})
            await peer.send_json({"jsonrpc": "2.0", "id": "1", "result": {}})
            await peer.send_json(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}}
            )
            outcome = Outcome()
            tg.start_soon(outcome.run, conn, "m")
            await peer.receive()
            await peer.send_json({"jsonrpc": "2.0", "id": 1, "result": "ok"})
            await outcome.wait()
    assert outcome.result == "ok"
    assert "unknown id 41" in caplog.text
    assert "unknown id '1'" in caplog.text
    assert "could not read a frame" in caplog.text


async def test_notifications_before_a_response_are_handled_before_the_caller_resumes() -> None:
    class AwaitingHandler(ScriptedHandler):
        async def handle_notification(self, method: str, params: JsonValue | None) -> None:
            await checkpoint()
            await checkpoint()
            self.notifications.append((method, params))

    handler = AwaitingHandler()
    async with serving(handler) as (conn, peer), anyio.create_task_group() as tg:
        seen_at_return: list[int] = []

        async def call() -> None:
            await conn.request("session/prompt")
            seen_at_return.append(len(handler.notifications))

        tg.start_soon(call)
        await peer.receive()
        lines = [b'{"jsonrpc":"2.0","method":"session/update","params":%d}' % n for n in range(3)]
        await peer.send_line(b"\n".join([*lines, b'{"jsonrpc":"2.0","id":1,"result":{}}']))
    assert seen_at_return == [3]
    assert [params for _, params in handler.notifications] == [0, 1, 2]


async def test_end_of_input_fails_outstanding_requests_with_connection_closed() -> None:
    async with serving(ScriptedHandler()) as (conn, peer), anyio.create_task_group() as tg:
        outcome = Outcome()
        tg.start_soon(outcome.run, conn, "m")
        await peer.receive()
        await peer.close()
        await outcome.wait()
        with anyio.fail_after(WAIT):
            await conn.closed.wait()
        with pytest.raises(ConnectionClosed):
            await conn.request("again")
        with pytest.raises(ConnectionClosed):
            await conn.notify("note")
    assert isinstance(outcome.error, ConnectionClosed)


async def test_a_cancelled_caller_withdraws_its_request_and_tells_the_peer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving(ScriptedHandler()) as (conn, peer), anyio.create_task_group() as tg:
        scope = anyio.CancelScope()

        async def call() -> None:
            with scope:
                await conn.request("slow/thing")

        tg.start_soon(call)
        assert (await peer.receive())["id"] == 1
        scope.cancel()
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": 1},
        }
        with caplog.at_level(logging.DEBUG, logger="muse_acp.rpc"):
            await peer.send_json({"jsonrpc": "2.0", "id": 1, "result": "late"})
            await peer.send_json({"jsonrpc": "2.0", "id": 1, "result": "again"})
            await conn.notify("after")
            assert (await peer.receive())["method"] == "after"
    assert scope.cancelled_caught
    # The first late answer was expected; a second one to the same id is the peer's mistake.
    levels = [
        (r.levelno, r.getMessage())
        for r in caplog.records
        if r.getMessage().endswith(("request 1", "id 1 ignored"))
    ]
    assert levels == [
        (logging.DEBUG, "served: late answer to withdrawn request 1"),
        (logging.WARNING, "served: response to unknown id 1 ignored"),
    ]


async def test_without_a_cancel_method_a_withdrawn_request_is_not_announced() -> None:
    async with serving(ScriptedHandler(), cancel_method=None) as (conn, peer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.request, "slow/thing")
            await peer.receive()
            tg.cancel_scope.cancel()
        await conn.notify("after")
        assert (await peer.receive())["method"] == "after"


async def test_callers_beyond_the_pending_limit_wait_for_a_slot() -> None:
    sent: list[bytes] = []

    def observe(direction: str, frame: bytes) -> None:
        if direction == "out":
            sent.append(frame)

    limited = serving(ScriptedHandler(), max_pending_outgoing=1, on_frame=observe)
    async with limited as (conn, peer), anyio.create_task_group() as tg:
        first, second = Outcome(), Outcome()
        tg.start_soon(first.run, conn, "a")
        tg.start_soon(second.run, conn, "b")
        assert (await peer.receive())["method"] == "a"
        await anyio.wait_all_tasks_blocked()
        assert len(sent) == 1
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "result": 1})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 2, "method": "b"}
        await peer.send_json({"jsonrpc": "2.0", "id": 2, "result": 2})
    assert (first.result, second.result) == (1, 2)


async def test_aclose_fails_callers_cancels_handlers_and_ends_the_peers_input() -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (conn, peer), anyio.create_task_group() as tg:
        outcome = Outcome()
        tg.start_soon(outcome.run, conn, "m")
        await peer.receive()
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        await handler.wait_slow_started()
        await conn.aclose()
        await outcome.wait()
        await peer.expect_end()
        with anyio.fail_after(WAIT):
            await conn.closed.wait()
            await anyio.wait_all_tasks_blocked()
        await conn.aclose()
    assert isinstance(outcome.error, ConnectionClosed)
    assert handler.slow_cancelled == [1]


async def test_serve_runs_once_and_not_after_aclose() -> None:
    async with memory_pair() as ((receive, send), _):
        conn = Connection(FrameReader(receive), FrameWriter(send), ScriptedHandler(), name="c")
        await conn.aclose()
        with anyio.fail_after(WAIT):
            await conn.serve()
        with pytest.raises(RuntimeError, match="already"):
            await conn.serve()


def test_the_pending_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_pending_outgoing"):
        Connection(
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            ScriptedHandler(),
            name="c",
            max_pending_outgoing=0,
        )


class CallingBack(ScriptedHandler):
    """Answers ``outer`` by first asking the peer for ``echo`` of its params."""

    conn: Connection | None = None

    async def handle_request(
        self, method: str, params: JsonValue | None, ctx: RequestContext
    ) -> Result:
        if method == "outer" and self.conn is not None:
            inner = await self.conn.request("echo", params)
            return {"inner": inner, "id": ctx.request_id}
        return await super().handle_request(method, params, ctx)


async def test_two_connections_can_call_each_other_while_a_request_is_open() -> None:
    left, right = ScriptedHandler(), CallingBack()
    async with connected(left, right) as (a, b):
        right.conn = b
        with anyio.fail_after(WAIT):
            result = await a.request("outer", {"x": 1})
            await a.notify("note", [1])
            await b.request("echo")
    assert result == {"inner": {"x": 1}, "id": 1}
    assert right.notifications == [("note", [1])]


async def test_started_requests_are_answered_in_any_order_and_collected_later() -> None:
    async with serving(ScriptedHandler()) as (conn, peer):
        first = await conn.start_request("page", {"at": 0})
        second = await conn.start_request("page", {"at": 1})
        assert [(await peer.receive())["id"], (await peer.receive())["id"]] == [1, 2]
        await peer.send_json({"jsonrpc": "2.0", "id": 2, "result": "b"})
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "x"}})
        with anyio.fail_after(WAIT):
            assert await second.result() == "b"
            with pytest.raises(RpcError) as refused:
                await first.result()
    assert refused.value.code == -32602


async def test_a_withdrawn_started_request_tells_the_peer_and_frees_its_slot() -> None:
    async with serving(ScriptedHandler(), max_pending_outgoing=1) as (conn, peer):
        started = await conn.start_request("page")
        assert (await peer.receive())["id"] == 1
        await started.withdraw()
        await started.withdraw()  # harmless twice
        assert await peer.receive() == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": 1},
        }
        with anyio.fail_after(WAIT):
            after = await conn.start_request("next")
        assert (await peer.receive())["id"] == 2
        await peer.send_json({"jsonrpc": "2.0", "id": 2, "result": 7})
        with anyio.fail_after(WAIT):
            assert await after.result() == 7


async def test_a_request_started_keeping_its_frame_gets_the_answering_line_as_it_came() -> None:
    line = b'{ "result" : {"text": "caf\\u00e9 \\/ ok"}, "id": 1, "jsonrpc": "2.0" }'
    async with serving(ScriptedHandler()) as (conn, peer):
        kept = await conn.start_request("page", keep_frame=True)
        plain = await conn.start_request("page")
        assert [(await peer.receive())["id"], (await peer.receive())["id"]] == [1, 2]
        assert kept.frame is None  # nothing before the answer
        await peer.send_line(line)
        await peer.send_json({"jsonrpc": "2.0", "id": 2, "result": {"text": "x"}})
        with anyio.fail_after(WAIT):
            assert await kept.result() == {"text": "caf\u00e9 / ok"}
            assert await plain.result() == {"text": "x"}
    assert kept.frame == line
    assert plain.frame is None  # not asked for: no frame is held
