"""Driving a simulated host, frame by frame.

A ``SimPeer`` is a client's end of one host connection: it sends frames and reads them back in
order. ``sim_served`` serves a host of the given version in process over memory streams, with
``ServeOptions`` members for settings, and yields a ``SimPeer`` that checks every frame it
reads against the bundle of that version (see ``validation``); what does not fit is collected
in ``violations``, which must be empty when the block ends (a test that expects a violation
removes it). ``runs`` starts a host from a ``muse-sim serve`` command line instead. Every wait
is bounded by ``WAIT`` seconds.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from muse_acp.rpc import FrameReader, OversizedFrame, encode_message
from muse_acp.rpc.memory import memory_stream_pair
from muse_acp.sim.options.faults import Faults
from muse_acp.sim.options.quirks import NO_QUIRKS, Quirks
from muse_acp.sim.options.settings import ServeOptions
from muse_acp.sim.options.versions import HOST_VERSIONS
from muse_acp.sim.serve.host import serve_streams
from muse_acp.sim.state.ids import new_uuid7

from .validation import check_frame

WAIT: Final = 10.0
"""Upper bound, in seconds, on any single wait for the simulator."""

Frame = dict[str, Any]


def label(frame: Frame) -> str:
    """``method`` for a notification, ``request <method>`` for a host request, else the
    outcome (``result`` or ``error``) of a response."""
    if "method" in frame:
        return f"request {frame['method']}" if "id" in frame else str(frame["method"])
    return "error" if "error" in frame else "result"


def labels(frames: list[Frame]) -> list[str]:
    return [label(frame) for frame in frames]


def item_of(frame: Frame) -> Frame:
    item: Frame = frame["params"]["item"]
    return item


def agent_texts(frames: list[Frame]) -> list[str]:
    """The texts of the agent messages completed among ``frames``, in order."""
    return [
        frame["params"]["item"]["text"]
        for frame in frames
        if frame.get("method") == "item/completed"
        and frame["params"]["item"]["kind"] == "agentMessage"
    ]


class SimPeer:
    """A client's end of one simulated host connection (see the module docstring)."""

    def __init__(
        self, receive: ByteReceiveStream, send: ByteSendStream, version: str, *, strict: bool
    ) -> None:
        self.reader = FrameReader(receive, max_frame_bytes=64 * 1024 * 1024)
        self._send_stream = send
        self.version = version
        self.strict = strict
        self.violations: list[str] = []
        self._asked: dict[Any, str] = {}
        self._next_id = 1
        self.lists = False
        """The connection streams the session list (``initialize`` granted it)."""
        self.after_start: list[Frame] = []
        """What ``start`` read after the result up to ``session/listChanged``, when it did."""

    async def send_raw(self, line: bytes) -> None:
        await self._send_stream.send(line + b"\n")

    async def send(self, message: Mapping[str, Any]) -> None:
        if "id" in message and isinstance(message.get("method"), str):
            self._asked[message["id"]] = message["method"]
        await self.send_raw(encode_message(message))

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def line(self, wait: float = WAIT) -> bytes | OversizedFrame:
        with anyio.fail_after(wait):
            return await self.reader.__anext__()

    async def next(self, wait: float = WAIT) -> Frame:
        line = await self.line(wait)
        assert not isinstance(line, OversizedFrame), "unexpected oversized frame"
        frame: Frame = json.loads(line)
        answered = None
        if "method" not in frame:
            answered = self._asked.pop(frame.get("id"), None)
        if self.strict:
            self.violations += check_frame(frame, self.version, answered)
        return frame

    async def until(self, stop: Callable[[Frame], bool]) -> list[Frame]:
        """Frames up to and including the first one ``stop`` accepts."""
        frames: list[Frame] = []
        while True:
            frame = await self.next()
            frames.append(frame)
            if stop(frame):
                return frames

    async def until_method(self, method: str) -> list[Frame]:
        return await self.until(lambda frame: frame.get("method") == method)

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None
    ) -> tuple[Frame, list[Frame]]:
        """Send a request; returns its response and the frames that came before it."""
        request_id = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        frames = await self.until(
            lambda frame: frame.get("id") == request_id and "method" not in frame
        )
        return frames[-1], frames[:-1]

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> Frame:
        response, _ = await self.request(method, params)
        assert "result" in response, response
        result: Frame = response["result"]
        return result

    async def error(self, method: str, params: Mapping[str, Any] | None = None) -> Frame:
        response, _ = await self.request(method, params)
        assert "error" in response, response
        error: Frame = response["error"]
        return error

    async def initialize(self, **capabilities: Any) -> Frame:
        params: dict[str, Any] = {"clientInfo": {"name": "sim_tests", "version": "1.0.0"}}
        if capabilities:
            params["capabilities"] = capabilities
        result = await self.call("initialize", params)
        await self.notify("initialized")
        self.lists = "sessionListStream" in result["grantedCapabilities"]
        return result

    async def start(self, workspace: Path | str = "/projects/demo", **extra: Any) -> str:
        session_id = new_uuid7()
        params = {
            "commandId": new_uuid7(),
            "sessionId": session_id,
            "workspaceRoot": str(workspace),
            **extra,
        }
        await self.call("session/start", params)
        if self.lists:  # the new row follows the result (after any approvalModeChanged)
            self.after_start = await self.until_method("session/listChanged")
        return session_id

    async def turn_start(self, session_id: str, text: str, **extra: Any) -> tuple[int, str]:
        """Send ``turn/start``; returns the request id and the turn id."""
        command_id = new_uuid7()
        request_id = self.new_id()
        params = {
            "commandId": command_id,
            "sessionId": session_id,
            "input": [{"type": "text", "text": text}],
            **extra,
        }
        await self.send(
            {"jsonrpc": "2.0", "id": request_id, "method": "turn/start", "params": params}
        )
        return request_id, command_id

    async def turn(self, session_id: str, text: str, **extra: Any) -> list[Frame]:
        """A whole turn: every frame from ``turn/start`` to ``turn/completed``."""
        await self.turn_start(session_id, text, **extra)
        return await self.until_method("turn/completed")

    async def reply(self, host_request: Frame, result: Mapping[str, Any] | None = None) -> None:
        await self.send({"jsonrpc": "2.0", "id": host_request["id"], "result": result or {}})


class _Watched(ByteSendStream):
    """Shows each write to ``watch`` before passing it on."""

    def __init__(self, inner: ByteSendStream, watch: Callable[[bytes], None]) -> None:
        self._inner = inner
        self._watch = watch

    async def send(self, item: bytes) -> None:
        self._watch(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def sim_served(
    home: Path,
    version: str,
    *,
    quirks: Quirks = NO_QUIRKS,
    faults: Faults | None = None,
    watch: Callable[[bytes], None] | None = None,
    **flags: Any,
) -> AsyncIterator[SimPeer]:
    """Serve a simulated host of ``version`` in process; ``flags`` are ``ServeOptions``
    members (``disable_write=True``...). Every frame read is checked against ``version``.
    ``watch``, when given, sees every write of the host at the moment it is made."""
    options = ServeOptions(
        home=home,
        version=HOST_VERSIONS[version],
        faults=faults or Faults(),
        quirks=quirks,
        **flags,
    )
    (client_in, client_out), (host_in, host_out) = memory_stream_pair()
    peer = SimPeer(client_in, client_out, version, strict=True)
    written: ByteSendStream = host_out if watch is None else _Watched(host_out, watch)

    async def serve() -> None:
        try:
            await serve_streams(options, host_in, written)
        finally:
            await host_out.aclose()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            try:
                yield peer
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(WAIT) as scope:
                    await client_out.aclose()
                    async for _ in peer.reader:  # what the host still writes before it stops
                        pass
                if scope.cancelled_caught:
                    group.cancel_scope.cancel()
    finally:
        for stream in (client_in, host_in, host_out):
            await stream.aclose()
    assert peer.violations == [], peer.violations
