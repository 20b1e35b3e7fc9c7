"""In-memory byte stream pairs, for connecting two endpoints inside one process.

Contract: ``memory_stream_pair`` returns two endpoints, each a ``(receive, send)`` tuple of anyio
byte streams; what one endpoint sends, the other receives, in order, through a bounded buffer
(a sender waits while ``max_buffer`` writes are unread). Closing a send stream ends the other
side's receive stream; closing a receive stream makes the other side's sends fail with
``anyio.BrokenResourceError``. ``FragmentingSendStream`` splits every write into small pieces of
pseudo-random size (seeded, so reproducible) to exercise the framing of whatever reads them.
"""

from __future__ import annotations

import random
from typing import TypeAlias

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["Endpoint", "FragmentingSendStream", "memory_stream_pair"]

Endpoint: TypeAlias = tuple[ByteReceiveStream, ByteSendStream]
"""One side of a connection: what it reads from and what it writes to."""

DEFAULT_MAX_BUFFER = 256
"""Unread writes a memory stream holds before its sender waits."""


class _MemoryByteReceiveStream(ByteReceiveStream):
    def __init__(self, inner: MemoryObjectReceiveStream[bytes]) -> None:
        self._inner = inner
        self._rest = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = self._rest or await self._inner.receive()
        if len(data) > max_bytes:
            self._rest = data[max_bytes:]
            return data[:max_bytes]
        self._rest = b""
        return data

    async def aclose(self) -> None:
        await self._inner.aclose()


class _MemoryByteSendStream(ByteSendStream):
    def __init__(self, inner: MemoryObjectSendStream[bytes]) -> None:
        self._inner = inner

    async def send(self, item: bytes) -> None:
        # An empty item would read as end of stream on the other side.
        if item:
            await self._inner.send(bytes(item))

    async def aclose(self) -> None:
        await self._inner.aclose()


def _one_way(max_buffer: int) -> tuple[ByteSendStream, ByteReceiveStream]:
    send, receive = anyio.create_memory_object_stream[bytes](max_buffer)
    return _MemoryByteSendStream(send), _MemoryByteReceiveStream(receive)


def memory_stream_pair(max_buffer: int = DEFAULT_MAX_BUFFER) -> tuple[Endpoint, Endpoint]:
    """Create two connected endpoints ``(a, b)``: ``a``'s writes are ``b``'s reads and back."""
    if max_buffer < 1:
        raise ValueError("max_buffer must be at least 1")
    a_send, b_receive = _one_way(max_buffer)
    b_send, a_receive = _one_way(max_buffer)
    return (a_receive, a_send), (b_receive, b_send)


class FragmentingSendStream(ByteSendStream):
    """Forwards each write as several smaller writes of 1 to ``max_fragment`` bytes."""

    def __init__(self, inner: ByteSendStream, *, seed: int = 0, max_fragment: int = 7) -> None:
        if max_fragment < 1:
            raise ValueError("max_fragment must be at least 1")
        self._inner = inner
        self._random = random.Random(seed)
        self._max_fragment = max_fragment

    async def send(self, item: bytes) -> None:
        offset = 0
        while offset < len(item):
            size = self._random.randint(1, self._max_fragment)
            await self._inner.send(item[offset : offset + size])
            offset += size

    async def aclose(self) -> None:
        await self._inner.aclose()
