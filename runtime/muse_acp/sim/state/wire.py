"""The simulated host's side of the MSP framing: screening input, writing output.

Contract: ``HostReader`` is the ``FrameReader`` the host's ``Connection`` reads from: it answers
every frame a real host refuses before dispatch itself, with ``data.kind`` and ``id: null``
unless a usable id could be read (a line over the frame limit, -32002 ``inputTooLarge``; not
JSON, -32700; not a single object, or a bad ``jsonrpc``, ``method`` or ``id``, -32600), and
appends every request and notification to a capture file when given. ``HostWriter`` writes
frames whole, in order, and says when a request's answer was written (``answered``), so events
that follow an answer never precede it. ``event_frame`` is the one place a host notification is
encoded, ``emittedAtMs`` last, as real hosts write it.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from muse_acp.rpc import (
    FrameReader,
    FrameWriter,
    OversizedFrame,
    RequestId,
    RpcError,
    encode_error,
    encode_message,
)
from muse_acp.sim.state import errors
from muse_acp.sim.state.ids import now_ms

__all__ = [
    "HOST_FRAME_LIMIT",
    "HostReader",
    "HostWriter",
    "Outbox",
    "RequestLedger",
    "event_frame",
    "log_line",
]

logger: Final = logging.getLogger("muse_acp.sim")

HOST_FRAME_LIMIT: Final = 10 * 1024 * 1024
"""The frame limit of real hosts (10,485,760 bytes); longer lines get -32002."""

_ANSWER_HEAD: Final = b'{"jsonrpc":"2.0","id":'
_ID_SCAN_CHARS: Final = 1024
_DECODER: Final = json.JSONDecoder()


def event_frame(method: str, params: bytes, emitted_at_ms: int) -> bytes:
    """A host notification frame: ``{"jsonrpc","method","params","emittedAtMs"}``."""
    return b"".join(
        (
            b'{"jsonrpc":"2.0","method":',
            encode_message(method),
            b',"params":',
            params,
            b',"emittedAtMs":%d}' % emitted_at_ms,
        )
    )


def log_line(method: str, params: bytes) -> bytes:
    """A durable view event as stored and paged: ``{"method","params"}``."""
    return b"".join((b'{"method":', encode_message(method), b',"params":', params, b"}"))


def _usable_id(value: object) -> RequestId | None:
    if type(value) is int or type(value) is str:
        return value
    return None


class HostWriter(FrameWriter):
    """A ``FrameWriter`` that signals when the answer to a request id has been written."""

    def __init__(
        self, stream: ByteSendStream, *, watch: Callable[[bytes], None] | None = None
    ) -> None:
        super().__init__(stream)
        self._awaited: dict[RequestId, anyio.Event] = {}
        self._then: dict[RequestId, Callable[[], None]] = {}
        self._watch = watch
        """Shown every frame just before it is written (``first_words``), when given."""

    def answered(self, request_id: RequestId) -> anyio.Event:
        """An event set once the response to ``request_id`` is written (register before)."""
        event = self._awaited.get(request_id)
        if event is None:
            event = self._awaited[request_id] = anyio.Event()
        return event

    def then(self, request_id: RequestId, action: Callable[[], None]) -> None:
        """Run ``action`` right after the answer to ``request_id`` is written, before any other
        frame can follow it (it must not block)."""
        self._then[request_id] = action
        self.answered(request_id)

    async def send(self, frame: bytes) -> None:
        if self._watch is not None:
            self._watch(frame)
        await super().send(frame)
        if self._awaited and frame.startswith(_ANSWER_HEAD):
            answered = self._answer_id(frame)
            if answered is not None:
                action = self._then.pop(answered, None)
                if action is not None:
                    action()
                event = self._awaited.pop(answered, None)
                if event is not None:
                    event.set()

    @staticmethod
    def _answer_id(frame: bytes) -> RequestId | None:
        head = frame[len(_ANSWER_HEAD) : len(_ANSWER_HEAD) + _ID_SCAN_CHARS]
        text = head.decode("utf-8", "ignore")
        try:
            value, end = _DECODER.raw_decode(text)
        except ValueError:
            return None
        if not text.startswith((',"result":', ',"error":'), end):
            return None  # a request of ours, not an answer
        return _usable_id(value)


class HostReader(FrameReader):
    """A ``FrameReader`` that answers unusable frames itself (see the module contract)."""

    def __init__(
        self, stream: ByteReceiveStream, writer: FrameWriter, *, capture: Path | None = None
    ) -> None:
        super().__init__(stream, max_frame_bytes=HOST_FRAME_LIMIT)
        self._writer = writer
        self._capture_fd: int | None = None
        if capture is not None:
            capture.parent.mkdir(parents=True, exist_ok=True)
            self._capture_fd = os.open(capture, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    async def __anext__(self) -> bytes | OversizedFrame:
        while True:
            frame = await super().__anext__()
            if isinstance(frame, OversizedFrame):
                await self._refuse(None, errors.input_too_large(HOST_FRAME_LIMIT))
                continue
            refusal = self._screen(frame)
            if refusal is None:
                return frame
            await self._refuse(*refusal)

    def close_capture(self) -> None:
        if self._capture_fd is not None:
            os.close(self._capture_fd)
            self._capture_fd = None

    async def aclose(self) -> None:
        self.close_capture()
        await super().aclose()

    def _screen(self, frame: bytes) -> tuple[RequestId | None, RpcError] | None:
        try:
            message = json.loads(frame)
        except (ValueError, RecursionError):
            return None, errors.parse_error()
        if type(message) is not dict:
            return None, errors.invalid_request("expected one JSON-RPC message object")
        has_id = "id" in message
        request_id = _usable_id(message.get("id"))
        if "method" not in message:
            if has_id and ("result" in message or "error" in message):
                return None  # a response to one of our requests
            return request_id, errors.invalid_request("frame is neither a request nor a response")
        if message.get("jsonrpc") != "2.0":
            return request_id, errors.invalid_request('jsonrpc must be "2.0"')
        if type(message["method"]) is not str:
            return request_id, errors.invalid_request("method must be a string")
        if has_id and request_id is None:
            return None, errors.invalid_request("id must be a string or an integer")
        self._record(frame)
        return None

    def _record(self, frame: bytes) -> None:
        if self._capture_fd is not None:
            view = memoryview(frame + b"\n")
            while view:
                view = view[os.write(self._capture_fd, view) :]

    async def _refuse(self, request_id: RequestId | None, error: RpcError) -> None:
        try:
            await self._writer.send(encode_error(request_id, error))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            logger.debug("could not refuse a frame: the client is gone")


class Outbox:
    """Where host notifications go: the writer, paced by the ``slow`` fault when it is set."""

    def __init__(self, writer: HostWriter, *, delay_ms: int = 0) -> None:
        self.writer = writer
        self._delay = delay_ms / 1000

    async def pace(self) -> None:
        """Wait out the simulated latency before an event (a no-op unless ``slow`` is set)."""
        if self._delay:
            await anyio.sleep(self._delay)

    async def send_event(self, method: str, params: bytes) -> None:
        # A frame cut short by a cancellation would leave the pipe unusable (the stdio stream
        # marks itself broken), so a turn being stopped still finishes the frame it is writing.
        with anyio.CancelScope(shield=True):
            await self.writer.send(event_frame(method, params, now_ms()))


_METHOD_MEMBER: Final = ',"method":'


class RequestLedger:
    """Tells when a request of ours has been handed to the writer.

    Its ``observe`` is the host connection's frame observer: it runs just before each frame is
    written, so whatever is sent after ``expect(method)`` is set goes out after that request.
    """

    def __init__(self) -> None:
        self._expected: dict[str, deque[anyio.Event]] = {}

    def expect(self, method: str) -> anyio.Event:
        event = anyio.Event()
        self._expected.setdefault(method, deque()).append(event)
        return event

    def observe(self, direction: str, frame: bytes) -> None:
        if direction != "out" or not self._expected or not frame.startswith(_ANSWER_HEAD):
            return
        text = frame[len(_ANSWER_HEAD) : len(_ANSWER_HEAD) + _ID_SCAN_CHARS].decode(
            "utf-8", "ignore"
        )
        try:
            _, end = _DECODER.raw_decode(text)
            if not text.startswith(_METHOD_MEMBER, end):
                return
            method, _ = _DECODER.raw_decode(text, end + len(_METHOD_MEMBER))
        except ValueError:
            return
        waiting = self._expected.get(method) if isinstance(method, str) else None
        if waiting:
            waiting.popleft().set()
            if not waiting:
                del self._expected[method]
