"""This process's standard input and output as anyio byte streams.

Contract: ``open_stdio()`` yields ``(receive, send)`` streams over file descriptors 0 and 1 (or
the ones given) for the duration of the ``async with`` block. Pipes and sockets are switched to
non-blocking mode and driven by the event loop (``anyio.wait_readable``/``wait_writable`` with
``os.read``/``os.write``); anything that cannot be polled (a regular file, a terminal,
``/dev/null``, any descriptor on Windows) is read and written from worker threads instead. The
original blocking mode is restored on exit, and the descriptors are never closed: they belong to
the process (a pipe found full is widened, ``widen_pipe``). A frame is written whole or the send
stream is marked broken: a cancellation that lands after part of a write leaves the stream
unusable rather than letting the next write splice into the middle of a line. A write asked to
``hand_over`` gives up the core once it has written, so the reader it woke runs first.

stdout is the protocol channel: nothing in the runtime prints, and any buffered ``sys.stdout``
text is flushed before the first frame so it cannot land in the middle of one.
"""

from __future__ import annotations

import os
import select
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.lowlevel import checkpoint

if sys.platform != "win32":
    import fcntl

__all__ = [
    "FULL_PIPE_BYTES",
    "MAX_WIDE_PIPES",
    "PIPE_BYTES",
    "WRITES_PER_YIELD",
    "FdReceiveStream",
    "FdSendStream",
    "narrowed",
    "open_stdio",
    "widen_pipe",
]

WRITES_PER_YIELD: Final = 16
"""Writes that complete at once in a row before a send yields to the event loop anyway.

Yielding on every write would cost a full event-loop pass per frame; never yielding would let a
task streaming notifications starve every other task (and its own cancellation) while the pipe
keeps up.
"""

PIPE_BYTES: Final = 1 << 20
"""The pipe buffer asked for where large frames pass (a page of stored output or history is
up to a MiB): a frame crosses in one write and one wake-up of its reader instead of sixteen
of each through the default 64 KiB."""
FULL_PIPE_BYTES: Final = 65536
"""What a default pipe holds: a read or write of this much found the pipe full."""
MAX_WIDE_PIPES: Final = 8
"""Pipes one process keeps widened at once. Linux counts a pipe's whole buffer against its
user's quota (``pipe-user-pages-soft``, 64 MiB by default) whether it is used or not, and a
user over the quota gets tiny pipes in every program; eight of a MiB stay an eighth of it."""

_wide_pipes = 0
"""Pipes this process widened that are still open (``widen_pipe``, ``narrowed``)."""


def widen_pipe(fd: int, size: int = PIPE_BYTES) -> bool:
    """Ask the kernel to let the pipe ``fd`` hold ``size`` bytes; True when this call widened
    it, which counts against ``MAX_WIDE_PIPES`` until ``narrowed`` (Linux only; best effort: a
    system that refuses, a user over its pipe quota or another kind of file keeps what it has).
    """
    global _wide_pipes
    if sys.platform != "linux" or _wide_pipes >= MAX_WIDE_PIPES:
        return False
    with suppress(OSError):
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < size:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
            _wide_pipes += 1
            return True
    return False


def narrowed() -> None:
    """A pipe ``widen_pipe`` widened was closed."""
    global _wide_pipes
    _wide_pipes = max(0, _wide_pipes - 1)


def _can_poll(fd: int) -> bool:
    if sys.platform == "win32":
        return False
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _hand_over() -> None:
    """Give up the core once, so that a reader just woken by a write runs before this process
    goes on (``coalescing.ImmediateSend`` says why). Windows has no such call, and no stream
    written there is polled."""
    if sys.platform != "win32":
        os.sched_yield()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class FdReceiveStream(ByteReceiveStream):
    """Reads a file descriptor; ``pollable`` selects event-loop polling over worker threads;
    ``owned``: closing the stream closes the descriptor (a pipe's read end, whose closing tells
    its writer nobody reads any more), waking any task still waiting on it first; ``widen``:
    the first time a read finds the pipe full, it is widened (``widen_pipe``)."""

    def __init__(
        self, fd: int, *, pollable: bool, owned: bool = False, widen: bool = False
    ) -> None:
        self._fd = fd
        self._pollable = pollable
        self._owned = owned
        self._closed = False
        self._widen = widen and pollable
        self._widened = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._pollable:
            waited = False
            while True:
                try:
                    data = os.read(self._fd, max_bytes)
                except BlockingIOError:
                    await anyio.wait_readable(self._fd)
                    waited = True
                    continue
                if not waited:
                    # Data was already there: still yield once so a busy peer cannot starve
                    # others (after a wait the task has yielded already; a second pass of the
                    # event loop per read would cost every frame of a turn).
                    await checkpoint()
                if self._widen and len(data) >= FULL_PIPE_BYTES:
                    self._widen = False  # large frames pass here: once is enough
                    self._widened = widen_pipe(self._fd)
                break
        else:
            # Abandoning is safe: a blocked read of stdin only ends with the process or the peer.
            data = await anyio.to_thread.run_sync(
                os.read, self._fd, max_bytes, abandon_on_cancel=True
            )
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        if self._owned and not self._closed:
            with suppress(OSError):
                anyio.notify_closing(self._fd)
                os.close(self._fd)
            self.narrow()
        self._closed = True

    def narrow(self) -> None:
        """Give back the widening of this stream's pipe to the budget (its pipe is closing)."""
        if self._widened:
            self._widened = False
            narrowed()


class FdSendStream(ByteSendStream):
    """Writes a file descriptor; ``pollable`` selects event-loop polling over worker threads;
    ``owned``: closing the stream closes the descriptor (a pipe's write end, whose closing is its
    reader's end of input), waking any task still waiting on it first; ``widen``: the first
    time a write finds the pipe full, it is widened (``widen_pipe``)."""

    def __init__(
        self, fd: int, *, pollable: bool, owned: bool = False, widen: bool = False
    ) -> None:
        self._fd = fd
        self._pollable = pollable
        self._owned = owned
        self._closed = False
        self._broken = False
        self._unyielded = 0
        self._widen = widen and pollable
        self._widened = False
        self._is_pipe: bool | None = None
        """Whether the descriptor is a pipe (known at the first ``send_whole_at_once``)."""

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError
        if not self._pollable:
            try:
                await anyio.to_thread.run_sync(_write_all, self._fd, item)
            except BrokenPipeError as exc:
                self._broken = True
                raise anyio.BrokenResourceError from exc
            return
        view = memoryview(item)
        started = False
        try:
            while view:
                try:
                    written = os.write(self._fd, view)
                except BlockingIOError:
                    written = 0
                if written:
                    started = True
                    view = view[written:]
                if view:
                    if self._widen:
                        self._widen = False  # large frames pass here: once is enough
                        self._widened = widen_pipe(self._fd)
                        continue  # the pipe may hold the rest now
                    await anyio.wait_writable(self._fd)
        except BrokenPipeError as exc:
            self._broken = True
            raise anyio.BrokenResourceError from exc
        except BaseException:
            # Part of the frame is out; anything written after it would corrupt the line.
            if started:
                self._broken = True
            raise
        self._unyielded += 1
        if self._unyielded >= WRITES_PER_YIELD:
            self._unyielded = 0
            await checkpoint()

    def send_whole_at_once(self, data: bytes, *, hand_over: bool = False) -> bool:
        """Write all of ``data`` now, or none of it (``transport.AtOnceSend``): True when it
        was written; False, with nothing written, when it cannot be written whole without a
        wait. Only a pipe of at most ``select.PIPE_BUF`` bytes is tried: a pipe writes that much
        whole or not at all. ``hand_over``: once written, give up the core (``sched_yield``)."""
        if self._closed or self._broken or not self._pollable or len(data) > select.PIPE_BUF:
            return False
        if self._is_pipe is None:
            self._is_pipe = stat.S_ISFIFO(os.fstat(self._fd).st_mode)
        if not self._is_pipe:
            return False
        try:
            written = os.write(self._fd, data)
        except OSError:
            return False  # full (``BlockingIOError``) or failing: ``send`` meets and reports it
        if written != len(data):  # no pipe does this; a stream cut mid-frame is of no use
            self._broken = True
            raise anyio.BrokenResourceError
        if hand_over:
            _hand_over()
        return True

    def send_immediately(self, data: bytes, *, hand_over: bool = False) -> int:
        """Write what of ``data`` the descriptor takes without a wait (``ImmediateSend``): how
        many bytes; 0 when it takes none, is not polled, or failed (``send`` then reports it).
        ``hand_over``: once bytes are written, give up the core (``sched_yield``)."""
        if self._closed or self._broken or not self._pollable:
            return 0
        try:
            written = os.write(self._fd, data)
        except OSError:
            return 0
        if hand_over and written:
            _hand_over()
        return written

    async def aclose(self) -> None:
        if self._owned and not self._closed:
            with suppress(OSError):
                anyio.notify_closing(self._fd)
                os.close(self._fd)
            self.narrow()
        self._closed = True

    def narrow(self) -> None:
        """Give back the widening of this stream's pipe to the budget (its pipe is closing)."""
        if self._widened:
            self._widened = False
            narrowed()


@asynccontextmanager
async def open_stdio(
    *, read_fd: int = 0, write_fd: int = 1
) -> AsyncIterator[tuple[ByteReceiveStream, ByteSendStream]]:
    """Open ``(receive, send)`` streams over ``read_fd`` and ``write_fd`` (stdin and stdout)."""
    if write_fd == 1 and sys.stdout is not None:
        sys.stdout.flush()
    read_poll = _can_poll(read_fd)
    write_poll = _can_poll(write_fd)
    saved: list[tuple[int, bool]] = []
    streams: tuple[FdReceiveStream, FdSendStream] | tuple[()] = ()
    try:
        for fd, poll in ((read_fd, read_poll), (write_fd, write_poll)):
            if poll:
                saved.append((fd, os.get_blocking(fd)))
                os.set_blocking(fd, False)
        receive = FdReceiveStream(read_fd, pollable=read_poll, widen=True)
        send = FdSendStream(write_fd, pollable=write_poll, widen=True)
        streams = (receive, send)
        yield receive, send
    finally:
        for stream in streams:
            stream.narrow()
        for fd, blocking in saved:
            os.set_blocking(fd, blocking)
