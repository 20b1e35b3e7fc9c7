"""Test doubles for the JSON-RPC runtime: a scripted handler, a raw peer, connected pairs.

Everything runs in memory; every wait is bounded by ``WAIT`` seconds.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from pydantic import BaseModel, ConfigDict, Field

from muse_acp.rpc import (
    RESOURCE_NOT_FOUND,
    Connection,
    FrameReader,
    FrameWriter,
    JsonInput,
    JsonObject,
    JsonValue,
    MessageHandler,
    RawJson,
    RequestContext,
    RequestId,
    Result,
    RpcError,
    encode_message,
)
from muse_acp.rpc.memory import Endpoint, memory_stream_pair

WAIT: Final = 5.0
"""Upper bound, in seconds, on any single wait in these tests."""


class OneRead(ByteReceiveStream):
    """A byte stream that gives ``data`` in one read, then ends."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data, self.data = self.data, b""
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        pass


class Writes(ByteSendStream):
    """A byte stream that keeps what is written, one entry per write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    async def send(self, item: bytes) -> None:
        self.writes.append(item)

    async def aclose(self) -> None:
        pass


class SampleResult(BaseModel):
    """A result model with an aliased member and an optional one left unset."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)

    stop_reason: str = Field(alias="stopReason")
    note: str | None = None


class ScriptedHandler:
    """A ``MessageHandler`` whose behaviour for each method is fixed for the tests.

    ``echo`` returns its params, ``slow`` waits for ``release``, ``winding`` takes its own
    cancellation over and answers once it has wound down, ``arrival`` returns its frame's
    position, ``boom`` fails unexpectedly,
    ``refuse`` raises an ``RpcError``, ``model``/``raw``/``none``/``nan`` return those kinds of
    result; anything else is unknown. Notifications are recorded, except ``explode``, which fails.
    """

    def __init__(self) -> None:
        self.notifications: list[tuple[str, JsonValue]] = []
        self.release = anyio.Event()
        self.slow_started: list[RequestId] = []
        self.slow_cancelled: list[RequestId] = []
        self.slow_event = anyio.Event()

    async def handle_request(
        self, method: str, params: JsonValue | None, ctx: RequestContext
    ) -> Result:
        match method:
            case "echo":
                return params
            case "slow":
                return await self._slow(ctx)
            case "winding":
                return await self._winding(ctx)
            case "arrival":
                return {"arrival": ctx.arrival}
            case "boom":
                raise ValueError("disk /secret/path exploded")
            case "refuse":
                raise RpcError(RESOURCE_NOT_FOUND, "no such session", {"sessionId": "s-9"})
            case "model":
                return SampleResult(stop_reason="end_turn")
            case "raw":
                return RawJson(b'{"pre":"serialized"}')
            case "none":
                return None
            case "nan":
                return float("nan")
            case _:
                raise RpcError.method_not_found(method)

    async def handle_notification(self, method: str, params: JsonValue | None) -> None:
        if method == "explode":
            raise RuntimeError("notification handler failed")
        self.notifications.append((method, params))

    async def _slow(self, ctx: RequestContext) -> Result:
        self.slow_started.append(ctx.request_id)
        self.slow_event.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.slow_cancelled.append(ctx.request_id)
            raise
        return {"released": ctx.request_id}

    async def _winding(self, ctx: RequestContext) -> Result:
        asked = anyio.Event()
        ctx.on_cancel(asked.set)
        self.slow_started.append(ctx.request_id)
        self.slow_event.set()
        with anyio.move_on_after(WAIT):
            await asked.wait()
        # The task was not cancelled: it winds down in order, then answers itself.
        self.slow_cancelled.append(ctx.request_id)
        raise RpcError.request_cancelled()

    async def wait_slow_started(self, count: int = 1) -> None:
        with anyio.fail_after(WAIT):
            while len(self.slow_started) < count:
                await self.slow_event.wait()
                self.slow_event = anyio.Event()


def error_code(message: JsonObject) -> int:
    """The code of an error response (failing the test if it is not one)."""
    error = message.get("error")
    assert isinstance(error, dict)
    code = error.get("code")
    assert isinstance(code, int)
    return code


class RawPeer:
    """The far end of a connection, speaking raw frames."""

    def __init__(self, receive: ByteReceiveStream, send: ByteSendStream) -> None:
        self.frames = FrameReader(receive)
        self._send = send

    async def send_line(self, line: bytes) -> None:
        await self._send.send(line + b"\n")

    async def send_json(self, message: JsonInput) -> None:
        await self.send_line(encode_message(message))

    async def receive(self) -> JsonObject:
        with anyio.fail_after(WAIT):
            frame = await self.frames.__anext__()
        assert isinstance(frame, bytes)
        message = json.loads(frame)
        assert isinstance(message, dict)
        return message

    async def expect_end(self) -> None:
        with anyio.fail_after(WAIT):
            async for frame in self.frames:
                raise AssertionError(f"unexpected frame {frame!r}")

    async def close(self) -> None:
        await self._send.aclose()


@asynccontextmanager
async def memory_pair(max_buffer: int = 256) -> AsyncIterator[tuple[Endpoint, Endpoint]]:
    """``memory_stream_pair`` whose four streams are all closed on exit."""
    pair = memory_stream_pair(max_buffer)
    try:
        yield pair
    finally:
        for endpoint in pair:
            for stream in endpoint:
                await stream.aclose()


@asynccontextmanager
async def serving(
    handler: MessageHandler, *, max_frame_bytes: int | None = None, **options: Any
) -> AsyncIterator[tuple[Connection, RawPeer]]:
    """Serve ``handler`` on a connection whose peer is a ``RawPeer``."""
    async with memory_pair() as ((receive, send), (peer_receive, peer_send)):
        reader = (
            FrameReader(receive)
            if max_frame_bytes is None
            else FrameReader(receive, max_frame_bytes=max_frame_bytes)
        )
        conn = Connection(reader, FrameWriter(send), handler, name="served", **options)
        async with anyio.create_task_group() as task_group:
            await task_group.start(conn.serve)
            yield conn, RawPeer(peer_receive, peer_send)
            await conn.aclose()


@asynccontextmanager
async def connected(
    left: MessageHandler, right: MessageHandler
) -> AsyncIterator[tuple[Connection, Connection]]:
    """Two served connections talking to each other in memory."""
    async with memory_pair() as ((l_receive, l_send), (r_receive, r_send)):
        a = Connection(FrameReader(l_receive), FrameWriter(l_send), left, name="left")
        b = Connection(FrameReader(r_receive), FrameWriter(r_send), right, name="right")
        async with anyio.create_task_group() as task_group:
            await task_group.start(a.serve)
            await task_group.start(b.serve)
            yield a, b
            await a.aclose()
            await b.aclose()
