"""Starting Muse: ``muse serve`` hosts and short commands, through one ``Launcher``.

Contract: ``Launcher.serve`` starts ``muse serve ...`` and yields a ``HostProcess`` (its pipes,
exit status and last stderr lines); leaving the block always ends and reaps it. ``Launcher.run``
runs a short command (``--version``, ``serve --help``, ``skills list``, ``logout``) to its end
within ``budget`` seconds and keeps at most ``limit`` bytes of each output (``Completed``);
it raises OSError when the command cannot be started. ``SUBPROCESSES`` is the launcher of a real
installation: each command is a child process leading its own group (``muse_acp.children``).
The agent receives its launcher once (``Startup``), so ``muse-sim`` can serve hosts inside the
test process (``muse_acp.sim.in_process``); the exec backend's runs stay children of their own.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Final, Protocol

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from muse_acp.children import spawn_child

__all__ = [
    "STDERR_LINE_LIMIT",
    "STDERR_TAIL_LINES",
    "SUBPROCESSES",
    "Completed",
    "HostProcess",
    "Launcher",
    "Subprocesses",
    "log_host_stderr",
]

logger: Final = logging.getLogger("muse_acp.host")

STDERR_TAIL_LINES: Final = 40
"""Lines of a host's stderr kept for error reports."""
STDERR_LINE_LIMIT: Final = 400
"""Characters of each such line kept."""
OUTPUT_AFTER_EXIT: Final = 1.0
"""Seconds a short command's output may take to arrive after the command exited."""


def log_host_stderr(line: str) -> None:
    """Log one line a host wrote to stderr (debug level: it may be noisy, or quote secrets the
    log's redaction removes)."""
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("host stderr: %s", line)


class HostProcess(Protocol):
    """A running ``muse serve``: what the MSP connection and failure reports read of it."""

    @property
    def pid(self) -> int: ...
    @property
    def stdin(self) -> ByteSendStream: ...
    @property
    def stdout(self) -> ByteReceiveStream: ...
    @property
    def returncode(self) -> int | None:
        """The exit status once known (None while it runs)."""

    @property
    def exited(self) -> anyio.Event:
        """Set once the exit status is known."""

    def stderr_tail(self) -> str:
        """The last lines it wrote to stderr, oldest first."""

    async def settle(self) -> None:
        """Wait (bounded) until its stderr is drained and its exit status known."""


@dataclass(frozen=True, slots=True)
class Completed:
    """How a short command ended: ``status`` None when it overran its budget and was killed."""

    status: int | None
    stdout: bytes
    stderr: bytes
    overflowed: bool = False
    """An output exceeded the ``limit``: the command was stopped there (``status`` None) and
    only the first ``limit`` bytes of that output are kept."""


class Launcher(Protocol):
    """Starts Muse (see the module contract)."""

    def serve(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None
    ) -> AbstractAsyncContextManager[HostProcess]: ...

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        budget: float,
        limit: int,
    ) -> Completed: ...


async def _collect(stream: ByteReceiveStream | None, sink: bytearray, limit: int) -> bool:
    """Read ``stream`` into ``sink`` until it ends or exceeds ``limit`` bytes (True: it did, and
    only ``limit`` bytes are kept)."""
    if stream is None:
        return False
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        async for chunk in stream:
            room = limit - len(sink)
            sink += chunk[: max(room, 0)]
            if len(chunk) > room:
                return True
    return False


class Subprocesses:
    """The real launcher: every command a child process in its own group."""

    @asynccontextmanager
    async def serve(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None
    ) -> AsyncIterator[HostProcess]:
        async with spawn_child(
            argv,
            cwd=cwd,
            env=env,
            on_line=log_host_stderr,
            tail_lines=STDERR_TAIL_LINES,
            line_limit=STDERR_LINE_LIMIT,
        ) as host:
            yield host

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        budget: float,
        limit: int,
    ) -> Completed:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
        stdout, stderr = bytearray(), bytearray()
        overflowed: list[bool] = []
        status: int | None = None
        try:
            with anyio.move_on_after(budget):
                async with anyio.create_task_group() as running:
                    read = anyio.Event()

                    async def one(stream: ByteReceiveStream | None, sink: bytearray) -> None:
                        if await _collect(stream, sink, limit):
                            overflowed.append(True)
                            running.cancel_scope.cancel()  # stopped there, not read on

                    async def collect() -> None:
                        async with anyio.create_task_group() as both:
                            both.start_soon(one, process.stdout, stdout)
                            both.start_soon(one, process.stderr, stderr)
                        read.set()

                    running.start_soon(collect)
                    finished = await process.wait()
                    # What is still in the pipes arrives at once; something the command left
                    # running that holds them open is not waited for (its group goes below).
                    with anyio.move_on_after(OUTPUT_AFTER_EXIT):
                        await read.wait()
                    status = finished
                    running.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                # The command's whole group goes, whether it overran its budget or left
                # something behind, and the command itself is reaped.
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
                await process.aclose()
        return Completed(status, bytes(stdout), bytes(stderr), bool(overflowed))


SUBPROCESSES: Final[Launcher] = Subprocesses()
