"""Running one ``muse serve`` child process: spawn, drain stderr, and always reap.

The child runs in its own process group so that closing it also ends anything it started. Its
stderr is always read (a chatty host must never block on a full pipe); the last few KiB are kept
for diagnostics and each line is logged at debug level. Closing the process closes its stdin,
waits briefly, then terminates and finally kills the whole group, and waits for the exit status,
so no zombie or orphan is left behind however the host behaves.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from muse_acp.tasks import task_group

logger: Final = logging.getLogger("muse_acp.host")

STDERR_TAIL_BYTES: Final = 8192
EXIT_GRACE: Final = 2.0
"""Seconds a host gets to exit on its own after its stdin closes."""
TERMINATE_GRACE: Final = 3.0
"""Seconds between SIGTERM and SIGKILL to the host's process group."""


class HostProcess:
    """A running ``muse serve`` child: its pipes, stderr tail and exit status."""

    def __init__(self, process: Process, description: str) -> None:
        self._process = process
        self.description = description
        self._stderr_tail = bytearray()
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

    def stderr_tail(self) -> str:
        """The last few KiB the host wrote to stderr (undecodable bytes replaced)."""
        return self._stderr_tail.decode("utf-8", "replace")

    async def drain_stderr(self) -> None:
        stream = self._process.stderr
        if stream is None:
            return
        pending = b""
        with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            while True:
                chunk = await stream.receive(65536)
                self._stderr_tail += chunk
                del self._stderr_tail[:-STDERR_TAIL_BYTES]
                if logger.isEnabledFor(logging.DEBUG):
                    lines = (pending + chunk).split(b"\n")
                    pending = lines.pop()[-STDERR_TAIL_BYTES:]
                    for line in lines:
                        logger.debug(
                            "host %d stderr: %s", self.pid, line.decode("utf-8", "replace")
                        )

    async def watch_exit(self) -> None:
        await self._process.wait()
        self.exited.set()

    def _signal_group(self, signum: int) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signum)

    async def close(self) -> None:
        """Close stdin, then terminate and kill the process group until it has exited."""
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
                # The host itself exited; anything it left in its group goes too.
                self._signal_group(signal.SIGKILL)
            self.exited.set()


@asynccontextmanager
async def spawn_host(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[HostProcess]:
    """Start ``argv`` (``muse serve ...``) and yield it; on exit the process is always reaped."""
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )
    host = HostProcess(process, " ".join(argv[:3]))
    logger.debug("started %s (pid %d) in %s", host.description, host.pid, cwd)
    try:
        async with task_group() as tasks:
            tasks.start_soon(host.drain_stderr)
            tasks.start_soon(host.watch_exit)
            try:
                yield host
            finally:
                await host.close()
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True), suppress(OSError):
            await process.aclose()
        logger.debug("host pid %d ended with %s", host.pid, process.returncode)
