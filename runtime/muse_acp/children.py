"""Child processes in their own process group: spawn, always read stderr, always reap.

Contract: ``spawn_child`` starts a command with piped stdio in a new session (so it leads its
own process group) and yields a ``ChildProcess``. Its stdin and stdout are pipes of our own,
written and read by the event loop where the platform polls pipes, and widened once found full
(``rpc.stdio``). Its stderr is read for as long as it is open (a chatty child must never block
on a full pipe): each line, cut to ``line_limit`` characters, goes to the ``on_line`` callback
and the last ``tail_lines`` lines are kept for error reports.
Leaving the block closes the child's stdin, gives it ``EXIT_GRACE`` seconds to exit, then
terminates and finally kills its whole group, and waits for its exit status, however the block
was left (normally, by an error or by cancellation), so no zombie or orphan remains. Both the
Muse hosts the agent runs and the agents the client library runs are children of this kind.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from muse_acp.rpc.stdio import FdReceiveStream, FdSendStream
from muse_acp.tasks import task_group

__all__ = ["EXIT_GRACE", "TERMINATE_GRACE", "ChildProcess", "LineHandler", "spawn_child"]

logger: Final = logging.getLogger("muse_acp.children")

LineHandler = Callable[[str], None]
"""Receives each stderr line (without its line break); must not block or raise."""

EXIT_GRACE: Final = 2.0
"""Seconds a child gets to exit on its own after its stdin closes."""
TERMINATE_GRACE: Final = 3.0
"""Seconds between SIGTERM and SIGKILL to the child's process group."""
SETTLE_TIMEOUT: Final = 2.0
"""Seconds to wait for a vanished child's last stderr lines and exit status."""

_READ_CHUNK: Final = 65536


class ChildProcess:
    """A running child: its pipes, the tail of its stderr and its exit status."""

    def __init__(
        self,
        process: Process,
        description: str,
        on_line: LineHandler | None,
        *,
        tail_lines: int,
        line_limit: int,
        stdin: ByteSendStream | None = None,
        stdout: ByteReceiveStream | None = None,
    ) -> None:
        self._process = process
        self._stdin = stdin if stdin is not None else process.stdin
        self._stdout = stdout if stdout is not None else process.stdout
        self.description = description
        self._on_line = on_line
        self._line_limit = line_limit
        self._tail: deque[str] = deque(maxlen=tail_lines)
        self.stderr_closed = anyio.Event()
        self.exited = anyio.Event()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def stdin(self) -> ByteSendStream:
        assert self._stdin is not None
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        assert self._stdout is not None
        return self._stdout

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    def stderr_lines(self) -> tuple[str, ...]:
        """The last lines the child wrote to stderr, oldest first."""
        return tuple(self._tail)

    def stderr_tail(self) -> str:
        """The same lines as one text."""
        return "\n".join(self._tail)

    async def settle(self) -> None:
        """Wait (bounded) until stderr is drained and the exit status is known."""
        with anyio.move_on_after(SETTLE_TIMEOUT):
            await self.stderr_closed.wait()
            await self.exited.wait()

    def _emit(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")[: self._line_limit]
        self._tail.append(line)
        if self._on_line is not None:
            try:
                self._on_line(line)
            except Exception:
                logger.exception("the stderr line handler of %s failed", self.description)

    async def drain_stderr(self) -> None:
        stream = self._process.stderr
        pending = b""
        cut = False  # skipping the rest of an over-long line whose head was emitted
        try:
            if stream is None:
                return
            with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                while True:
                    lines = (pending + await stream.receive(_READ_CHUNK)).split(b"\n")
                    pending = lines.pop()
                    for line in lines:
                        if not cut:
                            self._emit(line)
                        cut = False
                    if not cut and len(pending) > self._line_limit * 4:
                        # A line without end must not grow without bound: keep its head, skip
                        # the rest up to its line break.
                        self._emit(pending)
                        pending, cut = b"", True
                    elif cut:
                        pending = b""
            if pending and not cut:
                self._emit(pending)
        finally:
            self.stderr_closed.set()

    async def watch_exit(self) -> None:
        await self._process.wait()
        self.exited.set()

    def _signal_group(self, signum: int) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def close(self) -> None:
        """Close stdin, then terminate and kill the process group until the child exited."""
        with anyio.CancelScope(shield=True):
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await self.stdin.aclose()
            with anyio.move_on_after(EXIT_GRACE):
                await self._process.wait()
            if self._process.returncode is None:
                self._signal_group(signal.SIGTERM)
                with anyio.move_on_after(TERMINATE_GRACE):
                    await self._process.wait()
            if self._process.returncode is None:
                self._signal_group(signal.SIGKILL)
                await self._process.wait()
            else:
                # The child exited; anything it left behind in its group goes too.
                self._signal_group(signal.SIGKILL)
            self.exited.set()
            with anyio.move_on_after(SETTLE_TIMEOUT):
                await self.stderr_closed.wait()


@asynccontextmanager
async def spawn_child(
    argv: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    on_line: LineHandler | None = None,
    tail_lines: int = 40,
    line_limit: int = 2000,
) -> AsyncIterator[ChildProcess]:
    """Start ``argv`` and yield it; on exit the child and its process group are always reaped.

    Raises:
        OSError: the command could not be started.
    """
    stdin: FdSendStream | None = None
    stdout: FdReceiveStream | None = None
    child_stdin: int = subprocess.PIPE
    child_stdout: int = subprocess.PIPE
    if sys.platform != "win32":
        # Its output comes through a pipe of our own, read straight by the event loop and widened
        # once large frames fill it: a MiB frame then arrives in one read instead of sixteen,
        # each through asyncio's buffer. Its input too: written straight, and at once when it
        # takes a frame whole (``rpc.AtOnceSend``), as a prompt's ``turn/start`` is.
        read_end, child_stdout = os.pipe()
        stdout = FdReceiveStream(read_end, pollable=True, owned=True, widen=True)
        os.set_blocking(read_end, False)
        child_stdin, write_end = os.pipe()
        os.set_blocking(write_end, False)
        stdin = FdSendStream(write_end, pollable=True, owned=True, widen=True)
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=child_stdin,
            stdout=child_stdout,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except BaseException:
        for stream in (stdin, stdout):
            if stream is not None:
                await stream.aclose()
        raise
    finally:
        for child_end in (child_stdin, child_stdout):
            if child_end != subprocess.PIPE:
                os.close(child_end)  # the child has its copy
    child = ChildProcess(
        process,
        " ".join(argv[:3]),
        on_line,
        tail_lines=tail_lines,
        line_limit=line_limit,
        stdin=stdin,
        stdout=stdout,
    )
    logger.debug("started %s (pid %d)", child.description, child.pid)
    try:
        async with task_group() as tasks:
            tasks.start_soon(child.drain_stderr)
            tasks.start_soon(child.watch_exit)
            try:
                yield child
            finally:
                await child.close()
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True), suppress(OSError):
            for stream in (stdin, stdout):
                if stream is not None:
                    await stream.aclose()
            await process.aclose()
        logger.debug("pid %d (%s) ended with %s", child.pid, child.description, process.returncode)
