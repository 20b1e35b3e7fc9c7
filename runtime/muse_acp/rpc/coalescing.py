"""A send stream that writes many small frames as one, without holding any of them back.

Contract: a ``CoalescingSendStream`` wraps another byte send stream and needs its ``run`` task
going (``coalescing(inner)`` starts it). ``send`` queues small items and returns; ``run`` writes
whatever is queued in one inner ``send`` as soon as the sender yields to the event loop (which
``send`` does itself after ``ITEMS_PER_YIELD`` items in a row), so a lone frame goes out on the
next pass. Items of ``MAX_QUEUED_BYTES`` or more are written by their sender directly, and a
sender waits while that much is queued. Items go out in the order their ``send`` calls began.
``send_nowait`` queues only when ``send`` would not wait, and says whether it did.

Errors: items are written whole or not at all; after a failed inner write every ``send`` raises
``anyio.BrokenResourceError``. ``aclose`` writes what is queued, within the caller's deadline,
then closes the inner stream.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Final

import anyio
from anyio.abc import ByteSendStream
from anyio.lowlevel import checkpoint

__all__ = [
    "EXIT_FLUSH_TIMEOUT",
    "ITEMS_PER_YIELD",
    "MAX_QUEUED_BYTES",
    "CoalescingSendStream",
    "coalescing",
]

ITEMS_PER_YIELD: Final = 64
"""Items queued in a row before a sender yields so that the queue is written."""
MAX_QUEUED_BYTES: Final = 256 * 1024
"""Queued bytes at which senders wait, and the size from which an item skips the queue."""

EXIT_FLUSH_TIMEOUT: Final = 5.0
"""Seconds the end of a ``coalescing`` block may spend writing what is still queued."""

_WRITE_ERRORS: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class CoalescingSendStream(ByteSendStream):
    """Queues small writes and writes them together (see the module contract)."""

    def __init__(self, inner: ByteSendStream) -> None:
        self._inner = inner
        self._queue: list[bytes] = []
        self._queued = 0
        self._unyielded = 0
        self._queued_event = anyio.Event()
        self._written_event = anyio.Event()
        self._writing = anyio.Lock(fast_acquire=True)
        self._line: deque[anyio.Event] = deque()
        """Senders waiting for their turn, first in line first; only the first one is awake."""
        self._failure: BaseException | None = None
        self._closed = False

    @property
    def inner(self) -> ByteSendStream:
        return self._inner

    def _check_failure(self) -> None:
        if self._failure is not None:
            raise anyio.BrokenResourceError from self._failure

    def _check(self) -> None:
        self._check_failure()
        if self._closed:
            raise anyio.ClosedResourceError

    def send_nowait(self, item: bytes) -> bool:
        """Queue ``item`` as ``send`` would, if that takes neither a wait nor a yield; False,
        with nothing queued, when it would (or when the stream is broken or closed: ``send``
        then raises why)."""
        if (
            self._failure is not None
            or self._closed
            or not item
            or self._line
            or self._queued + len(item) > MAX_QUEUED_BYTES
            or self._unyielded + 1 >= ITEMS_PER_YIELD
        ):
            return False
        self._queue.append(item)
        self._queued += len(item)
        if len(self._queue) == 1:
            self._queued_event.set()
        self._unyielded += 1
        return True

    async def send(self, item: bytes) -> None:
        self._check()
        if not item:
            return
        if len(item) >= MAX_QUEUED_BYTES:
            await self._send_large(item)
            return
        if self._line or self._queued >= MAX_QUEUED_BYTES:
            await self._wait_in_line(self._room)
        # Nothing waits between leaving the line and queueing: no later sender can go first.
        self._queue.append(item)
        self._queued += len(item)
        if len(self._queue) == 1:
            self._queued_event.set()
        self._unyielded += 1
        if self._unyielded >= ITEMS_PER_YIELD:
            self._unyielded = 0
            await checkpoint()

    async def run(self) -> None:
        """Write what is queued whenever there is something, until cancelled or broken."""
        while True:
            await self._queued_event.wait()
            self._queued_event = anyio.Event()
            try:
                async with self._writing:
                    await self._write_queue()
            except anyio.BrokenResourceError:
                return  # recorded: every later send reports it

    async def flush(self) -> None:
        """Write what is queued now (``anyio.BrokenResourceError`` if the stream broke)."""
        self._check_failure()
        async with self._writing:
            await self._write_queue()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            # A broken stream has nobody left to read what is queued.
            with suppress(anyio.BrokenResourceError):
                await self.flush()
        await self._inner.aclose()

    async def _send_large(self, item: bytes) -> None:
        """Write ``item`` directly, after everything queued before it (see the contract)."""
        await self._wait_in_line(self._writing.acquire)
        try:
            self._check_failure()
            await self._write_queue()  # takes the queue before it waits: nothing joins it first
            await self._write(item)
        finally:
            self._writing.release()

    async def _room(self) -> None:
        while self._queued >= MAX_QUEUED_BYTES:
            await self._written()
            self._check()

    async def _wait_in_line(self, admitted: Callable[[], Awaitable[None]]) -> None:
        """Wait until every sender ahead has gone, then for ``admitted``, keeping this sender's
        place in line meanwhile (see the module contract)."""
        turn = anyio.Event()
        self._line.append(turn)
        try:
            if self._line[0] is not turn:
                await turn.wait()
            self._check()
            await admitted()
        finally:
            first = self._line[0] is turn
            self._line.remove(turn)
            if first and self._line:
                # The next sender wakes once this one has placed its item (no wait in between).
                self._line[0].set()

    async def _written(self) -> None:
        await self._written_event.wait()

    async def _write_queue(self) -> None:
        if not self._queue or self._failure is not None:
            return
        data = b"".join(self._queue)
        self._queue.clear()
        self._queued = 0
        self._unyielded = 0
        await self._write(data)

    async def _write(self, data: bytes) -> None:
        try:
            await self._inner.send(data)
        except _WRITE_ERRORS as error:
            self._failure = error
            raise anyio.BrokenResourceError from error
        finally:
            written, self._written_event = self._written_event, anyio.Event()
            written.set()


@asynccontextmanager
async def coalescing(inner: ByteSendStream) -> AsyncIterator[CoalescingSendStream]:
    """A ``CoalescingSendStream`` over ``inner`` with its writer task running in the block.

    Leaving the block writes what is still queued (for at most ``EXIT_FLUSH_TIMEOUT`` seconds:
    a reader that stopped reading must not hold the process) and stops the task; ``inner`` is
    left open for its owner.
    """
    stream = CoalescingSendStream(inner)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(stream.run)
        try:
            yield stream
        finally:
            with anyio.move_on_after(EXIT_FLUSH_TIMEOUT, shield=True):
                with suppress(anyio.BrokenResourceError):
                    await stream.flush()
            tasks.cancel_scope.cancel()
