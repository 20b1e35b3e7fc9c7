"""How a served connection classifies and answers what its peer sends."""

from __future__ import annotations

import logging

import anyio
import pytest

from muse_acp.rpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
    Connection,
    JsonObject,
    JsonValue,
    RequestContext,
    RequestId,
)

from .harness import WAIT, RawPeer, ScriptedHandler, error_code, serving

pytestmark = pytest.mark.anyio

PING: JsonObject = {"jsonrpc": "2.0", "id": "ping", "method": "echo", "params": {"p": 1}}


async def expect_ping_answer(peer: RawPeer) -> None:
    """Send a request and check that its answer is the very next frame."""
    await peer.send_json(PING)
    assert await peer.receive() == {"jsonrpc": "2.0", "id": "ping", "result": {"p": 1}}


@pytest.mark.parametrize(
    ("line", "code", "reply_id"),
    [
        pytest.param(b'{"jsonrpc":"2.0","id":1,"method"', PARSE_ERROR, None, id="truncated"),
        pytest.param(b"\xff\xfe\x00{", PARSE_ERROR, None, id="not-utf8"),
        pytest.param(b"[" * 100_000, PARSE_ERROR, None, id="nested-too-deep"),
        pytest.param(b"[]", INVALID_REQUEST, None, id="empty-batch"),
        pytest.param(
            b'[{"jsonrpc":"2.0","id":1,"method":"echo"}]', INVALID_REQUEST, None, id="batch"
        ),
        pytest.param(b"42", INVALID_REQUEST, None, id="number"),
        pytest.param(b'"text"', INVALID_REQUEST, None, id="string"),
        pytest.param(b"null", INVALID_REQUEST, None, id="null"),
        pytest.param(b'{"id":1,"method":"echo"}', INVALID_REQUEST, 1, id="jsonrpc-missing"),
        pytest.param(b'{"jsonrpc":"1.0","id":"a","method":"echo"}', INVALID_REQUEST, "a", id="v1"),
        pytest.param(b'{"jsonrpc":2,"method":"echo"}', INVALID_REQUEST, None, id="jsonrpc-number"),
        pytest.param(
            b'{"jsonrpc":"2.0","id":true,"method":"echo"}', INVALID_REQUEST, None, id="bool-id"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":1.5,"method":"echo"}', INVALID_REQUEST, None, id="float-id"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":{},"method":"echo"}', INVALID_REQUEST, None, id="object-id"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":null,"method":"echo"}', INVALID_REQUEST, None, id="null-id"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":7,"method":5}', INVALID_REQUEST, 7, id="method-number"
        ),
        pytest.param(b'{"jsonrpc":"2.0","method":null}', INVALID_REQUEST, None, id="method-null"),
        pytest.param(b'{"jsonrpc":"2.0","id":3}', INVALID_REQUEST, 3, id="id-only"),
        pytest.param(b"{}", INVALID_REQUEST, None, id="empty-object"),
    ],
)
async def test_unusable_frames_are_answered_once_with_the_right_code_and_id(
    line: bytes, code: int, reply_id: RequestId | None
) -> None:
    async with serving(ScriptedHandler()) as (_, peer):
        await peer.send_line(line)
        answer = await peer.receive()
        assert answer["jsonrpc"] == "2.0"
        assert answer["id"] == reply_id
        assert isinstance(answer["error"], dict)
        assert error_code(answer) == code
        assert set(answer) == {"jsonrpc", "id", "error"}
        await expect_ping_answer(peer)


async def test_an_oversized_frame_is_refused_and_the_next_frame_is_served() -> None:
    async with serving(ScriptedHandler(), max_frame_bytes=100) as (_, peer):
        line = b'{"jsonrpc":"2.0","id":1,"method":"echo","params":"' + b"x" * 200 + b'"}'
        await peer.send_line(line)
        answer = await peer.receive()
        assert answer["id"] is None
        assert answer["error"] == {
            "code": INVALID_REQUEST,
            "message": f"frame of {len(line)} bytes exceeds the 100-byte limit",
        }
        await expect_ping_answer(peer)


@pytest.mark.parametrize(
    ("method", "result"),
    [
        ("none", None),
        ("model", {"stopReason": "end_turn"}),
        ("raw", {"pre": "serialized"}),
    ],
)
async def test_results_are_sent_as_returned(method: str, result: JsonObject | None) -> None:
    async with serving(ScriptedHandler()) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 9, "method": method})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 9, "result": result}


async def test_params_reach_the_handler_as_sent() -> None:
    async with serving(ScriptedHandler()) as (_, peer):
        params: JsonObject = {"a": [1, "é", None, {"b": False}]}
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": params})
        assert (await peer.receive())["result"] == params


async def test_an_unknown_request_is_answered_method_not_found() -> None:
    async with serving(ScriptedHandler()) as (_, peer):
        for request_id, method in enumerate(["nope", "_vendor/ext"]):
            await peer.send_json({"jsonrpc": "2.0", "id": request_id, "method": method})
            assert await peer.receive() == {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {
                    "code": METHOD_NOT_FOUND,
                    "message": f"unknown method {method}",
                    "data": {"method": method},
                },
            }


async def test_notifications_are_handled_and_never_answered() -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "method": "note", "params": {"n": 1}})
        await peer.send_json({"jsonrpc": "2.0", "method": "unknown-note"})
        await expect_ping_answer(peer)
    assert handler.notifications == [("note", {"n": 1}), ("unknown-note", None)]


async def test_a_failing_notification_handler_is_logged_not_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving(ScriptedHandler()) as (_, peer):
        with caplog.at_level(logging.ERROR, logger="muse_acp.rpc"):
            await peer.send_json({"jsonrpc": "2.0", "method": "explode"})
            await expect_ping_answer(peer)
    assert "explode" in caplog.text
    assert "notification handler failed" in caplog.text


async def test_handler_failures_are_mapped_without_leaking_details(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serving(ScriptedHandler()) as (_, peer):
        with caplog.at_level(logging.ERROR, logger="muse_acp.rpc"):
            await peer.send_line(b'{"jsonrpc":"2.0","id":1,"method":"boom"}')
            raw = await peer.frames.__anext__()
        await peer.send_json({"jsonrpc": "2.0", "id": 2, "method": "refuse"})
        refused = await peer.receive()
        await peer.send_json({"jsonrpc": "2.0", "id": 3, "method": "nan"})
        unencodable = await peer.receive()
    assert raw == b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error"}}'
    assert "/secret/path" in caplog.text
    assert "Traceback" in caplog.text
    assert refused["error"] == {
        "code": RESOURCE_NOT_FOUND,
        "message": "no such session",
        "data": {"sessionId": "s-9"},
    }
    assert unencodable["error"] == {"code": INTERNAL_ERROR, "message": "internal error"}


async def test_cancel_request_answers_the_request_cancelled_exactly_once() -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 5, "method": "slow"})
        await handler.wait_slow_started()
        cancel: JsonObject = {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": 5},
        }
        await peer.send_json(cancel)
        answer = await peer.receive()
        await peer.send_json(cancel)
        await expect_ping_answer(peer)
    assert answer == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": REQUEST_CANCELLED, "message": "request cancelled"},
    }
    assert handler.slow_cancelled == [5]
    assert handler.notifications == []


async def test_a_handler_that_takes_its_cancellation_over_answers_it_itself() -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 6, "method": "winding"})
        await handler.wait_slow_started()
        await peer.send_json(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 6}}
        )
        answer = await peer.receive()
    assert error_code(answer) == REQUEST_CANCELLED
    assert handler.slow_cancelled == [6]


async def test_a_request_knows_its_position_among_every_frame_read() -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "method": "note"})
        await peer.send_line(b"not json")
        assert error_code(await peer.receive()) == PARSE_ERROR
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "arrival"})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"arrival": 3}}


@pytest.mark.parametrize(
    "params", [{"requestId": 99}, {"requestId": "5"}, {"requestId": True}, {}, [5], None]
)
async def test_cancel_request_for_anything_else_is_ignored(params: object) -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 5, "method": "slow"})
        await handler.wait_slow_started()
        notice: JsonObject = {"jsonrpc": "2.0", "method": "$/cancel_request"}
        if params is not None:
            notice["params"] = params  # type: ignore[assignment]
        await peer.send_json(notice)
        await expect_ping_answer(peer)
        handler.release.set()
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 5, "result": {"released": 5}}
    assert handler.slow_cancelled == []


async def test_a_custom_cancel_method_replaces_the_default() -> None:
    handler = ScriptedHandler()
    async with serving(handler, cancel_method="x/cancel") as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": "r", "method": "slow"})
        await handler.wait_slow_started()
        await peer.send_json(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "r"}}
        )
        await peer.send_json({"jsonrpc": "2.0", "method": "x/cancel", "params": {"requestId": "r"}})
        assert error_code(await peer.receive()) == REQUEST_CANCELLED
    assert handler.notifications == [("$/cancel_request", {"requestId": "r"})]


async def test_a_request_id_already_in_flight_is_refused_for_that_frame_only() -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 4, "method": "slow"})
        await handler.wait_slow_started()
        await peer.send_json({"jsonrpc": "2.0", "id": 4, "method": "echo", "params": 1})
        refused = await peer.receive()
        handler.release.set()
        completed = await peer.receive()
        await expect_ping_answer(peer)
    assert refused["id"] == 4
    assert error_code(refused) == INVALID_REQUEST
    assert completed == {"jsonrpc": "2.0", "id": 4, "result": {"released": 4}}
    assert handler.slow_started == [4]


async def test_ids_are_distinct_by_type() -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        await handler.wait_slow_started()
        await peer.send_json({"jsonrpc": "2.0", "id": "1", "method": "echo", "params": "s"})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": "1", "result": "s"}
        handler.release.set()
        assert (await peer.receive())["id"] == 1


async def test_a_slow_request_does_not_hold_up_later_ones() -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (_, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        await peer.send_json({"jsonrpc": "2.0", "id": 2, "method": "slow"})
        await handler.wait_slow_started(2)
        await expect_ping_answer(peer)
        handler.release.set()
        answers = {(await peer.receive())["id"] for _ in range(2)}
    assert answers == {1, 2}


async def test_end_of_input_cancels_requests_in_flight_and_stops_serving() -> None:
    handler = ScriptedHandler()
    async with serving(handler) as (conn, peer):
        await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "slow"})
        await handler.wait_slow_started()
        await peer.close()
        with anyio.fail_after(WAIT):
            await conn.closed.wait()
            await anyio.wait_all_tasks_blocked()
    assert handler.slow_cancelled == [1]


async def test_the_frame_observer_sees_every_frame_both_ways() -> None:
    seen: list[tuple[str, bytes]] = []
    async with serving(ScriptedHandler(), on_frame=lambda d, f: seen.append((d, f))) as (_, peer):
        await expect_ping_answer(peer)
    assert seen == [
        ("in", b'{"jsonrpc":"2.0","id":"ping","method":"echo","params":{"p":1}}'),
        ("out", b'{"jsonrpc":"2.0","id":"ping","result":{"p":1}}'),
    ]


async def test_follow_ups_run_after_the_response_is_written() -> None:
    connections: list[Connection] = []

    class Handler:
        async def handle_request(
            self, method: str, params: JsonValue | None, ctx: RequestContext
        ) -> JsonValue:
            async def follow() -> None:
                await connections[0].notify("after", {"n": 1})

            ctx.after_response(follow)
            return {"ok": 1}

        async def handle_notification(self, method: str, params: JsonValue | None) -> None:
            return None

    async with serving(Handler()) as (conn, peer):
        connections.append(conn)
        await peer.send_json({"jsonrpc": "2.0", "id": 7, "method": "x"})
        response = await peer.receive()
        follow_up = await peer.receive()
    assert response == {"jsonrpc": "2.0", "id": 7, "result": {"ok": 1}}
    assert follow_up == {"jsonrpc": "2.0", "method": "after", "params": {"n": 1}}


async def test_a_follow_up_that_finds_the_peer_gone_stops_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    connections: list[Connection] = []
    ran: list[str] = []

    class Handler:
        async def handle_request(
            self, method: str, params: JsonValue | None, ctx: RequestContext
        ) -> JsonValue:
            async def late() -> None:
                with anyio.fail_after(WAIT):
                    await connections[0].closed.wait()
                ran.append("late")
                await connections[0].notify("after", {"n": 1})

            async def never() -> None:
                ran.append("never")

            ctx.after_response(late)
            ctx.after_response(never)
            return {"ok": 1}

        async def handle_notification(self, method: str, params: JsonValue | None) -> None:
            return None

    caplog.set_level(logging.DEBUG, logger="muse_acp.rpc")
    async with serving(Handler()) as (conn, peer):
        connections.append(conn)
        await peer.send_json({"jsonrpc": "2.0", "id": 7, "method": "x"})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 7, "result": {"ok": 1}}
        await peer.close()
        with anyio.fail_after(WAIT):
            await conn.closed.wait()
            await anyio.wait_all_tasks_blocked()
    assert ran == ["late"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [r for r in caplog.records if r.exc_info]
