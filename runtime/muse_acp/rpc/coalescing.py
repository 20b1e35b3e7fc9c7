"""A send stream that writes many small frames as one, without holding any of them back.

Contract: a ``CoalescingSendStream`` wraps another byte send stream and needs its ``run`` task
going (``coalescing(inner)`` starts it). ``send`` queues small items and returns; ``run`` writes
whatever is queued in one inner ``send`` as soon as the sender yields to the event loop (which
``send`` does itself after ``ITEMS_PER_YIELD`` items in a row), so a lone frame goes out on the
next pass. Every item is queued when its ``send`` begins, so items go out in that order; a
``send`` then waits while ``MAX_QUEUED_BYTES`` were queued ahead of its item and not yet taken
by the writer, and cancelling it ends only its wait. An item of ``MAX_QUEUED_BYTES`` or more is
written alone, and its ``send`` returns once it is written. ``send_nowait`` queues only when
``send`` would not wait; with ``now`` the queue is written at once if nothing is being written
and the inner stream takes bytes without a wait (``ImmediateSend``), the rest first from ``run``;
with ``hand_over`` too, the reader goes first once it is written (``ImmediateSend``).
Errors: items are written whole or not at all; after a failed inner write every ``send`` raises
``anyio.BrokenResourceError``. ``aclose`` writes what is queued, within the caller's deadline.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Final, Protocol, runtime_checkable

import anyio
from anyio.abc import ByteSendStream
from anyio.lowlevel import checkpoint

__all__ = [
    "EXIT_FLUSH_TIMEOUT",
    "ITEMS_PER_YIELD",
    "MAX_QUEUED_BYTES",
    "CoalescingSendStream",
    "ImmediateSend",
    "coalescing",
]

ITEMS_PER_YIELD: Final = 64
"""Items queued in a row before a sender yields so that the queue is written."""
MAX_QUEUED_BYTES: Final = 256 * 1024
"""Queued bytes at which senders wait, and the size from which an item is written alone."""

EXIT_FLUSH_TIMEOUT: Final = 5.0
"""Seconds the end of a ``coalescing`` block may spend writing what is still queued."""

_WRITE_ERRORS: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


@runtime_checkable
class ImmediateSend(Protocol):
    """A byte stream that can write without waiting (``stdio.FdSendStream`` is one)."""

    def send_immediately(self, data: bytes, *, hand_over: bool = False) -> int:
        """Write what of ``data`` goes without a wait; how many bytes (0: none, or it cannot).

        ``hand_over``: what is written is what the reader waits for; once some is written, this
        process gives up the core so that the reader it woke runs before it goes on. A machine
        with fewer free cores than busy processes otherwise lets the writer run on (through the
        rest of a burst of host events) while the woken reader waits for a core.
        """
        ...


class CoalescingSendStream(ByteSendStream):
    """Queues small writes and writes them together (see the module contract)."""

    def __init__(self, inner: ByteSendStream) -> None:
        self._inner = inner
        self._queue: list[bytes] = []
        self._queued = 0
        self._large = 0
        """Items of ``MAX_QUEUED_BYTES`` or more in the queue (written alone, not joined)."""
        self._taken = 0
        self._written_bytes = 0
        """Bytes ever taken from the queue and ever written: a large send's ticket is the count
        of bytes queued up to its item, and it waits until that many are written."""
        self._writer_running = False
        self._writer_stopped = False
        self._unyielded = 0
        self._queued_event = anyio.Event()
        self._written_event = anyio.Event()
        self._writing = anyio.Lock(fast_acquire=True)
        self._failure: BaseException | None = None
        self._closed = False

    @property
    def inner(self) -> ByteSendStream:
        return self._inner

    def _check_failure(self) -> None:
        if self._failure is not None:
            raise anyio.BrokenResourceError from self._failure

    def _check_writer(self) -> None:
        """Raise if nothing queued will be written any more: broken, or ``run`` stopped."""
        self._check_failure()
        if self._writer_stopped:
            raise anyio.ClosedResourceError

    def _check(self) -> None:
        self._check_failure()
        if self._closed:
            raise anyio.ClosedResourceError

    def send_nowait(self, item: bytes, *, now: bool = False, hand_over: bool = False) -> bool:
        """Queue ``item`` as ``send`` would, if that takes neither a wait nor a yield; False,
        with nothing queued, when it would (or when the stream is broken or closed: ``send``
        then raises why). ``now``: write the queue at once if it can go without a wait;
        ``hand_over`` (with ``now``): the reader goes first once it is written."""
        if (
            self._failure is not None
            or self._closed
            or not item
            or self._queued + len(item) >= MAX_QUEUED_BYTES  # that send would wait
            or self._unyielded + 1 >= ITEMS_PER_YIELD
        ):
            return False
        self._queue.append(item)
        self._queued += len(item)
        if len(self._queue) == 1:
            self._queued_event.set()
        self._unyielded += 1
        if now:
            self._write_now(hand_over)
        return True

    def _write_now(self, hand_over: bool) -> None:
        """Write the queue without waiting, if nothing is being written and the inner stream
        can; a part it does not take stays first in the queue, for ``run``. A write error is
        left to ``run``, which meets it again and reports it as any write's."""
        inner = self._inner
        if self._writing.locked() or self._large or not isinstance(inner, ImmediateSend):
            return
        data = b"".join(self._queue)
        written = inner.send_immediately(data, hand_over=hand_over)
        if not written:
            return
        self._queue.clear()
        if written < len(data):
            self._queue.append(data[written:])
        self._taken += written
        self._queued -= written
        self._written_bytes += written
        self._unyielded = 0
        self._wake_waiters()

    async def send(self, item: bytes) -> None:
        self._check()
        if not item:
            return
        # Queued at once, whatever befalls this sender, so no later send goes first; only the
        # wait below can be cancelled, never the write (a write cut short would break the
        # stream, one skipped would lose frames).
        ahead = self._taken + self._queued
        self._queue.append(item)
        self._queued += len(item)
        if len(self._queue) == 1:
            self._queued_event.set()
        if len(item) >= MAX_QUEUED_BYTES:
            self._large += 1
            await self._until_written(ahead + len(item))
            return
        if ahead - self._taken >= MAX_QUEUED_BYTES:
            await self._room(ahead)
            return
        self._unyielded += 1
        if self._unyielded >= ITEMS_PER_YIELD:
            self._unyielded = 0
            await checkpoint()

    async def run(self) -> None:
        """Write what is queued whenever there is something, until cancelled or broken."""
        self._writer_running = True
        try:
            while True:
                await self._queued_event.wait()
                self._queued_event = anyio.Event()
                async with self._writing:
                    await self._write_queue()
        except anyio.BrokenResourceError:
            return  # recorded: every later send reports it
        finally:
            self._writer_running = False
            self._writer_stopped = True
            self._wake_waiters()

    async def flush(self) -> None:
        """Write what is queued now (``anyio.BrokenResourceError`` if the stream broke): wait
        for ``run`` to write it, or write it here when ``run`` is not going."""
        self._check_failure()
        if self._writer_running:
            await self._until_written(self._taken + self._queued)
            return
        async with self._writing:
            await self._write_queue()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            # A broken stream has nobody left to read what is queued.
            with suppress(anyio.BrokenResourceError):
                await self.flush()
        await self._inner.aclose()

    async def _until_written(self, ticket: int) -> None:
        """Wait until the first ``ticket`` bytes ever queued are written."""
        while self._written_bytes < ticket:
            self._check_writer()
            await self._written()

    async def _room(self, ahead: int) -> None:
        """Wait while ``MAX_QUEUED_BYTES`` queued before byte ``ahead`` are not yet taken."""
        while ahead - self._taken >= MAX_QUEUED_BYTES:
            self._check_writer()
            await self._written()

    async def _written(self) -> None:
        await self._written_event.wait()

    async def _write_queue(self) -> None:
        if not self._queue or self._failure is not None:
            return
        self._taken += self._queued
        self._queued = 0
        self._unyielded = 0
        if not self._large:
            data = b"".join(self._queue)
            self._queue.clear()
            await self._write(data)
            return
        # A large item is written alone (joining would copy it), all in queue order.
        taken, self._queue, self._large = self._queue, [], 0
        start = 0
        for end, item in enumerate(taken):
            if len(item) >= MAX_QUEUED_BYTES:
                if start < end:
                    await self._write(b"".join(taken[start:end]))
                await self._write(item)
                start = end + 1
        if start < len(taken):
            await self._write(b"".join(taken[start:]))

    async def _write(self, data: bytes) -> None:
        try:
            await self._inner.send(data)
            self._written_bytes += len(data)
        except _WRITE_ERRORS as error:
            self._failure = error
            raise anyio.BrokenResourceError from error
        finally:
            self._wake_waiters()

    def _wake_waiters(self) -> None:
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
