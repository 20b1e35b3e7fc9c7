"""Running an ACP agent as a child process: spawn, drain stderr, and always reap.

Contract: ``spawn_agent`` starts the agent in its own process group with piped stdio and yields
an ``AgentProcess``. Its stderr is read for as long as it is open: every line (cut to
``STDERR_LINE_LIMIT`` characters) goes to the ``on_stderr`` callback, which by default writes
it to this process's stderr, and the last ``STDERR_TAIL_LINES`` lines are kept for error
reports. Leaving the block closes the agent's stdin, gives it ``EXIT_GRACE`` seconds to exit,
then terminates and finally kills its whole group, and waits for its exit status, however the
block was left (normally, by an error or by cancellation), so no zombie or orphan remains.
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

from muse_acp.tasks import task_group

__all__ = [
    "EXIT_GRACE",
    "STDERR_LINE_LIMIT",
    "STDERR_TAIL_LINES",
    "AgentProcess",
    "StderrHandler",
    "forward_to_stderr",
    "spawn_agent",
]

logger: Final = logging.getLogger("muse_acp.client")

StderrHandler = Callable[[str], None]
"""Receives each line the agent writes to stderr (without its line break); must not block."""

STDERR_TAIL_LINES: Final = 40
STDERR_LINE_LIMIT: Final = 2000
EXIT_GRACE: Final = 2.0
"""Seconds the agent gets to exit on its own after its stdin closes."""
TERMINATE_GRACE: Final = 3.0
"""Seconds between SIGTERM and SIGKILL to the agent's process group."""
SETTLE_TIMEOUT: Final = 2.0
"""Seconds to wait for a vanished agent's last stderr lines and exit status."""

_READ_CHUNK: Final = 65536


def forward_to_stderr(line: str) -> None:
    """The default ``on_stderr``: copy the agent's line to this process's stderr."""
    stream = sys.stderr
    if stream is not None:
        stream.write(line + "\n")
        stream.flush()


class AgentProcess:
    """A running agent child: its pipes, the tail of its stderr and its exit status."""

    def __init__(self, process: Process, on_stderr: StderrHandler) -> None:
        self._process = process
        self._on_stderr = on_stderr
        self._tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.stderr_closed = anyio.Event()
        self.exited = anyio.Event()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def stdin(self) -> ByteSendStream:
        assert self._process.stdin is not None
        return self._process.stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        assert self._process.stdout is not None
        return self._process.stdout

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    def stderr_lines(self) -> tuple[str, ...]:
        """The last lines the agent wrote to stderr, oldest first."""
        return tuple(self._tail)

    async def settle(self) -> None:
        """Wait (bounded) until the agent's stderr is drained and its exit status is known.

        Called when the connection broke, so error reports carry the agent's last words.
        """
        with anyio.move_on_after(SETTLE_TIMEOUT):
            await self.stderr_closed.wait()
            await self.exited.wait()

    def _emit(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").rstrip("\r")[:STDERR_LINE_LIMIT]
        self._tail.append(line)
        try:
            self._on_stderr(line)
        except Exception:
            logger.exception("the on_stderr callback failed")

    async def drain_stderr(self) -> None:
        stream = self._process.stderr
        pending = b""
        try:
            if stream is None:
                return
            with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                while True:
                    lines = (pending + await stream.receive(_READ_CHUNK)).split(b"\n")
                    pending = lines.pop()
                    if len(pending) > STDERR_LINE_LIMIT * 4:
                        # A line without end must not grow without bound: show it in pieces.
                        lines.append(pending)
                        pending = b""
                    for line in lines:
                        self._emit(line)
            if pending:
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
        """Close stdin, then terminate and kill the process group until the agent has exited."""
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
                # The agent exited; anything it left behind in its group goes too.
                self._signal_group(signal.SIGKILL)
            self.exited.set()
            with anyio.move_on_after(SETTLE_TIMEOUT):
                await self.stderr_closed.wait()


@asynccontextmanager
async def spawn_agent(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    on_stderr: StderrHandler = forward_to_stderr,
) -> AsyncIterator[AgentProcess]:
    """Start ``argv`` and yield it; on exit the agent and its process group are always reaped.

    ``env`` entries are laid over this process's environment.

    Raises:
        OSError: the command could not be started.
    """
    environment = {**os.environ, **env} if env is not None else None
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=environment,
        start_new_session=True,
    )
    agent = AgentProcess(process, on_stderr)
    logger.debug("started agent %s (pid %d)", " ".join(argv[:4]), agent.pid)
    try:
        async with task_group() as tasks:
            tasks.start_soon(agent.drain_stderr)
            tasks.start_soon(agent.watch_exit)
            try:
                yield agent
            finally:
                await agent.close()
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True), suppress(OSError):
            await process.aclose()
        logger.debug("agent pid %d ended with %s", agent.pid, process.returncode)
