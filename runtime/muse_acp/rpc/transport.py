"""NDJSON framing over anyio byte streams, and JSON-RPC envelope encoding.

Contract: one frame is one JSON text on one LF-terminated line. ``FrameReader`` yields each
non-blank line without its terminator (a CR before the LF is dropped, a final unterminated line
at end of stream is still yielded); a line longer than ``max_frame_bytes`` is never buffered
whole: it is skipped up to its LF and reported as ``OversizedFrame`` so the peer can be told.
``FrameWriter`` appends the LF and writes each frame whole, never interleaved with another:
over a plain stream it passes writers a turn in the order they arrived; over a
``CoalescingSendStream``, which queues whole items in the order it is given them, it hands each
frame straight on (see ``FrameWriter``).
The ``encode_*`` functions build compact envelopes (member order ``jsonrpc, id, method, params``
/ ``jsonrpc, id, result|error``) as bytes; pydantic models and ``RawJson`` values are spliced in
as already-serialized JSON, without a round trip through ``dict``. ``FrameObserver`` and
``FrameLane`` are what a connection may hand the frames it reads (and writes) to.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal, Protocol, TypeAlias, runtime_checkable

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from pydantic import BaseModel

from muse_acp.rpc.coalescing import CoalescingSendStream
from muse_acp.rpc.errors import RpcError
from muse_acp.rpc.jsonvalue import JsonInput, RequestId

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_READ_CHUNK_BYTES",
    "AtOnceSend",
    "FrameLane",
    "FrameObserver",
    "FrameReader",
    "FrameWriter",
    "OversizedFrame",
    "Payload",
    "RawJson",
    "encode_error",
    "encode_message",
    "encode_notification",
    "encode_request",
    "encode_result",
    "encode_value",
]

DEFAULT_MAX_FRAME_BYTES: Final = 16 * 1024 * 1024
"""Room for a 6 MiB image as base64 (8 MiB) plus the rest of a prompt."""

DEFAULT_READ_CHUNK_BYTES: Final = 256 * 1024
"""Large reads keep per-frame overhead low when many small frames arrive together."""

_MAX_PIECES: Final = 64
"""Pieces of an unfinished line kept apart before they are folded into one buffer."""


@dataclass(frozen=True, slots=True)
class RawJson:
    """A value that is already one compact JSON text, written to the wire as is."""

    data: bytes

    def __post_init__(self) -> None:
        # A raw line break would end the frame early and desynchronise the peer.
        if b"\n" in self.data or b"\r" in self.data:
            raise ValueError("RawJson must not contain line breaks")

    @classmethod
    def encoded(cls, data: bytes) -> RawJson:
        """``data``, which a JSON encoder wrote in compact form (pydantic-core's ``to_json``, or
        pieces of its output joined), without the scan for line breaks: such an encoder escapes
        every line break inside a string and writes none between values. Meant for values sent
        many times a second (streamed text chunks), where the scan costs as much as the rest of
        building the value."""
        raw = object.__new__(cls)
        object.__setattr__(raw, "data", data)
        return raw


@dataclass(frozen=True, slots=True)
class OversizedFrame:
    """Stands in for a line that exceeded the frame limit and was discarded."""

    size_seen: int
    """How many bytes the discarded line had (its terminator excluded)."""


Payload: TypeAlias = BaseModel | RawJson | JsonInput
"""What may be sent as params or as a result."""

_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_message(obj: JsonInput) -> bytes:
    """Encode a JSON value compactly (no spaces, UTF-8, no NaN or infinities)."""
    return _ENCODER.encode(obj).encode()


def encode_value(value: Payload) -> bytes:
    """Encode params or a result; models are dumped by alias and without unset members."""
    if isinstance(value, BaseModel):
        # The core serializer yields bytes directly; model_dump_json would decode then re-encode.
        return value.__pydantic_serializer__.to_json(value, by_alias=True, exclude_unset=True)
    if isinstance(value, RawJson):
        return value.data
    return _ENCODER.encode(value).encode()


def _encode_id(request_id: RequestId | None) -> bytes:
    if request_id is None:
        return b"null"
    if type(request_id) is int:
        return b"%d" % request_id
    return _ENCODER.encode(request_id).encode()


@lru_cache(maxsize=256)
def _method_json(method: str) -> bytes:
    # A connection sends a few methods many times over (every streamed update): encode each once.
    return _ENCODER.encode(method).encode()


def encode_request(request_id: RequestId, method: str, params: Payload = None) -> bytes:
    """Encode a request; ``params`` is omitted when None."""
    head = b'{"jsonrpc":"2.0","id":' + _encode_id(request_id) + b',"method":'
    method_json = _method_json(method)
    if params is None:
        return b"".join((head, method_json, b"}"))
    return b"".join((head, method_json, b',"params":', encode_value(params), b"}"))


def encode_notification(method: str, params: Payload = None) -> bytes:
    """Encode a notification; ``params`` is omitted when None."""
    method_json = _method_json(method)
    if params is None:
        return b"".join((b'{"jsonrpc":"2.0","method":', method_json, b"}"))
    return b"".join(
        (b'{"jsonrpc":"2.0","method":', method_json, b',"params":', encode_value(params), b"}")
    )


def encode_result(request_id: RequestId, result: Payload) -> bytes:
    """Encode a success response; a None result is sent as ``null``."""
    return b"".join(
        (
            b'{"jsonrpc":"2.0","id":',
            _encode_id(request_id),
            b',"result":',
            encode_value(result),
            b"}",
        )
    )


def encode_error(request_id: RequestId | None, error: RpcError) -> bytes:
    """Encode an error response; ``request_id`` is None when the request id was unreadable."""
    return b"".join(
        (
            b'{"jsonrpc":"2.0","id":',
            _encode_id(request_id),
            b',"error":',
            _ENCODER.encode(error.to_object()).encode(),
            b"}",
        )
    )


class FrameReader:
    """Async iterator over the frames of a byte stream (see the module contract).

    Errors other than end of stream propagate from the underlying stream.
    """

    def __init__(
        self,
        stream: ByteReceiveStream,
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        read_chunk_bytes: int = DEFAULT_READ_CHUNK_BYTES,
    ) -> None:
        if max_frame_bytes < 1 or read_chunk_bytes < 1:
            raise ValueError("frame and chunk sizes must be positive")
        self._stream = stream
        self._max = max_frame_bytes
        self._chunk = read_chunk_bytes
        self._ready: deque[bytes | OversizedFrame] = deque()
        # The start of a line whose LF has not arrived yet, in the pieces it came in: only ever
        # scanned once, and copied once when the line is whole (growing one buffer chunk by
        # chunk cost a MiB line ten times as much).
        self._partial: list[bytes | bytearray] = []
        self._partial_bytes = 0
        # Bytes of an oversized line discarded so far, or -1 when not discarding.
        self._discarded = -1
        self._eof = False

    @property
    def stream(self) -> ByteReceiveStream:
        return self._stream

    @property
    def max_frame_bytes(self) -> int:
        return self._max

    def __aiter__(self) -> FrameReader:
        return self

    async def __anext__(self) -> bytes | OversizedFrame:
        ready = self._ready
        while not ready:
            if self._eof:
                raise StopAsyncIteration
            try:
                chunk = await self._stream.receive(self._chunk)
            except anyio.EndOfStream:
                self._finish()
            else:
                self._feed(chunk)
        return ready.popleft()

    async def aclose(self) -> None:
        await self._stream.aclose()

    def _emit(self, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line or line.isspace():
            return
        if len(line) > self._max:
            self._ready.append(OversizedFrame(len(line)))
        else:
            self._ready.append(line)

    def _feed(self, chunk: bytes) -> None:
        start = 0
        if self._discarded >= 0 or self._partial:
            newline = chunk.find(b"\n")
            if newline < 0:
                self._extend_partial(chunk)
                return
            if self._discarded >= 0:
                self._ready.append(OversizedFrame(self._discarded + newline))
                self._discarded = -1
            else:
                line = b"".join((*self._partial, memoryview(chunk)[:newline]))
                self._clear_partial()
                self._emit(line)
            start = newline + 1
        last_newline = chunk.rfind(b"\n", start)
        if last_newline >= 0:
            emit = self._emit
            for line in chunk[start:last_newline].split(b"\n"):
                emit(line)
            start = last_newline + 1
        if start < len(chunk):
            self._extend_partial(chunk[start:] if start else chunk)

    def _extend_partial(self, data: bytes) -> None:
        if self._discarded >= 0:
            self._discarded += len(data)
        elif self._partial_bytes + len(data) > self._max + 1:  # + 1: the CR before the LF
            self._discarded = self._partial_bytes + len(data)
            self._clear_partial()
        else:
            partial = self._partial
            partial.append(data)
            self._partial_bytes += len(data)
            if len(partial) > _MAX_PIECES:
                # A line read in many small pieces: fold them into one growing buffer, so the
                # list stays short however the peer splits its writes.
                head = partial[0] if isinstance(partial[0], bytearray) else bytearray(partial[0])
                head += b"".join(partial[1:])
                self._partial = [head]

    def _clear_partial(self) -> None:
        self._partial = []
        self._partial_bytes = 0

    def _finish(self) -> None:
        self._eof = True
        if self._discarded >= 0:
            self._ready.append(OversizedFrame(self._discarded))
            self._discarded = -1
        elif self._partial:
            line = b"".join(self._partial)
            self._clear_partial()
            self._emit(line)


@runtime_checkable
class AtOnceSend(Protocol):
    """A byte stream writing a small item whole at once or not at all (a pipe's, ``stdio``);
    ``hand_over``: once it is written, the reader goes first (as ``ImmediateSend``'s)."""

    def send_whole_at_once(self, data: bytes, *, hand_over: bool = False) -> bool: ...


class FrameWriter:
    """Writes whole frames to a byte stream, one at a time, in the order writers arrived.

    A ``CoalescingSendStream`` already keeps each item whole and queues items in the order its
    ``send`` is called, so frames go to it without a turn. A turn there would cost much under
    contention: a writer that yields while holding it (the coalescing stream yields every few
    items) makes every later writer wait for a hand-off, and each hand-off wakes the coalescing
    writer for a write of one frame, so many sessions streaming at once would cost a wake-up and
    a write per frame. What the turn also gave, that writers kept waiting go first when room
    comes back, the coalescing stream gives itself: frames are queued in the order their sends
    began, a waiting writer keeping its place. So a frame sent after another's send began (a
    prompt's answer after the last update of its turn) never goes out before it.
    """

    def __init__(self, stream: ByteSendStream) -> None:
        self._stream = stream
        self._takes_whole_items = isinstance(stream, CoalescingSendStream)
        self._at_once = stream if isinstance(stream, AtOnceSend) else None
        # A hand-off lock: the uncontended case (nearly every frame) costs no await beyond the
        # stream's own send, and a releasing writer passes the turn to the oldest waiter, so a
        # task streaming notifications cannot starve a response waiting to go out.
        self._busy = False
        self._waiters: deque[anyio.Event] = deque()

    @property
    def stream(self) -> ByteSendStream:
        return self._stream

    def send_nowait(self, frame: bytes, *, now: bool = False, hand_over: bool = False) -> bool:
        """Queue ``frame`` followed by LF if that needs no wait: only over a coalescing stream
        that takes it at once (``CoalescingSendStream.send_nowait``, whose ``now`` and
        ``hand_over`` these are); False, with nothing queued, otherwise (``send`` then tells)."""
        stream = self._stream
        if not isinstance(stream, CoalescingSendStream):
            return False
        return stream.send_nowait(frame + b"\n", now=now, hand_over=hand_over)

    def send_at_once(self, frame: bytes, *, hand_over: bool = False) -> bool:
        """Write ``frame`` and LF now if no other write is under way and the stream writes it
        whole at once (``AtOnceSend``, ``hand_over`` as there); False, nothing written, if not."""
        at_once = self._at_once
        if at_once is None or self._busy:
            return False
        return at_once.send_whole_at_once(frame + b"\n", hand_over=hand_over)

    async def send(self, frame: bytes) -> None:
        """Write ``frame`` followed by LF.

        Raises:
            anyio.BrokenResourceError: the peer stopped reading.
            anyio.ClosedResourceError: the writer was closed.
        """
        if self._takes_whole_items:
            await self._stream.send(frame + b"\n")
            return
        if self._busy:
            turn = anyio.Event()
            self._waiters.append(turn)
            try:
                await turn.wait()
            except BaseException:
                if turn.is_set():
                    self._release()
                else:
                    self._waiters.remove(turn)
                raise
        else:
            self._busy = True
        try:
            await self._stream.send(frame + b"\n")
        finally:
            self._release()

    def _release(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()
        else:
            self._busy = False

    async def aclose(self) -> None:
        await self._stream.aclose()


FrameObserver: TypeAlias = Callable[[Literal["in", "out"], bytes], None]
"""Called with every frame read or written (without its LF); must not raise or block."""


class FrameLane(Protocol):
    """A short way for incoming frames of common kinds, offered each frame before it is
    decoded. A lane takes a frame only when the ordinary way would make the same of it, so the
    way a frame took never changes what it does; it saves that way's decoding and layers on the
    frames that are nearly all of a connection's traffic (a turn's events)."""

    def __call__(self, frame: bytes) -> bool | Awaitable[None]:
        """False when ``frame`` is not taken; True when it was handled; or, when it was taken
        but its handling has to wait, what is left of it, which the connection awaits before it
        reads on (a failure of that is logged, as a notification handler's is)."""
        ...
