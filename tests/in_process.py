"""The in-process tier: ``muse-acp serve`` and its ``muse-sim`` hosts inside the test process.

``serving_agent(env)`` serves the agent on two pipes of this process through the very code
``muse-acp serve`` runs on stdio (``agent.server.serve_streams`` over ``rpc.open_stdio``), with
the configuration ``env`` gives and ``SimLauncher`` starting its hosts (a world's plain
launcher is played in process; anything else is still a process; pass ``launcher`` to arm
faults or see the hosts it served). It yields the client's
asyncio streams, as the SDK's ``spawn_agent_process`` would; ``agent_task`` serves it for a raw
client, as a process-like ``AgentTask``. The agent's log goes to ``log``
at the level ``env``'s ``MUSE_ACP_LOG`` sets, as it would go to a process's stderr; the simulated
hosts' own records stay out of it, as a host's stderr would. While it runs, ``env`` is the
process environment, as it would be the agent's own. Leaving the block closes the
agent's input and waits (bounded) until it has stopped, with every host reaped; an agent that
does not stop fails the test.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Final

import anyio

from muse_acp.agent.handshake.startup import Startup
from muse_acp.agent.server import serve_streams
from muse_acp.config import load_config
from muse_acp.logs import resolve_level
from muse_acp.redact import RedactingFilter
from muse_acp.rpc import open_stdio
from muse_acp.rpc.stdio import FdReceiveStream, FdSendStream
from muse_acp.sim.in_process import SimLauncher

STOP_WAIT: Final = 15.0
"""Seconds the agent may take to stop once its input is closed (its hosts' graces and more)."""
READ_LIMIT: Final = 64 * 1024 * 1024
"""The client's longest line, well above the agent's largest frame."""


class _NotTheHosts(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith("muse_acp.sim")


@asynccontextmanager
async def _agent_log(log: Path | None, env: Mapping[str, str]) -> AsyncIterator[None]:
    if log is None:
        yield
        return
    chosen = resolve_level(None, env).upper()
    handler = logging.FileHandler(log, encoding="utf-8")
    handler.setFormatter(logging.Formatter("muse-acp %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    handler.addFilter(_NotTheHosts())
    logger = logging.getLogger("muse_acp")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(chosen)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()


@contextmanager
def _process_environment(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` as this process's environment while the agent runs: what the agent reads of
    its process (redaction, the home folder) is then what ``muse-acp serve`` would read."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


async def _client_streams(
    read_fd: int, write_fd: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, asyncio.BaseTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_LIMIT)
    reading, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0)
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb", 0)
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return reader, writer, reading


async def _serve(
    env: Mapping[str, str], agent_in: int, agent_out: int, launcher: SimLauncher | None
) -> None:
    """The agent on its two pipe ends until its input ends; the ends are closed after."""
    try:
        startup = Startup(load_config(env), env, launcher or SimLauncher())
        async with open_stdio(read_fd=agent_in, write_fd=agent_out) as (receive, send):
            await serve_streams(startup, receive, send)
    finally:
        for fd in (agent_in, agent_out):
            with suppress(OSError):
                os.close(fd)


@asynccontextmanager
async def serving_agent(
    env: Mapping[str, str], *, log: Path | None = None, launcher: SimLauncher | None = None
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """Serve the agent in process (see the module contract); yields the client's streams."""
    agent_in, client_out = os.pipe()
    client_in, agent_out = os.pipe()
    stopped = anyio.Event()

    async def agent() -> None:
        try:
            await _serve(env, agent_in, agent_out, launcher)
        finally:
            stopped.set()

    with _process_environment(env):
        async with _agent_log(log, env), anyio.create_task_group() as tasks:
            reader, writer, reading = await _client_streams(client_in, client_out)
            tasks.start_soon(agent)
            try:
                yield reader, writer
            finally:
                with anyio.CancelScope(shield=True):
                    writer.close()
                    with anyio.move_on_after(STOP_WAIT) as waited:
                        await stopped.wait()
                    tasks.cancel_scope.cancel()
                    reading.close()
            assert not waited.cancelled_caught, f"the agent did not stop within {STOP_WAIT:g}s"


class AgentTask:
    """The agent served in process, seen as the raw client sees a process: its stdin and
    stdout, an exit status (0 once it stopped) and ``kill`` (cancels it)."""

    def __init__(self, stdin: FdSendStream, stdout: FdReceiveStream, scope: anyio.CancelScope):
        self.stdin = stdin
        self.stdout = stdout
        self._scope = scope
        self.stopped = anyio.Event()

    @property
    def pid(self) -> int:
        return os.getpid()

    @property
    def returncode(self) -> int | None:
        return 0 if self.stopped.is_set() else None

    async def wait(self) -> int:
        await self.stopped.wait()
        return 0

    def kill(self) -> None:
        self._scope.cancel()


@asynccontextmanager
async def agent_task(
    env: Mapping[str, str], *, log: Path | None = None, launcher: SimLauncher | None = None
) -> AsyncIterator[AgentTask]:
    """Serve the agent in process for a raw client (see ``AgentTask``); leaving the block closes
    its input and waits (bounded) until it has stopped."""
    agent_in, client_out = os.pipe()
    client_in, agent_out = os.pipe()
    for fd in (client_in, client_out):
        os.set_blocking(fd, False)
    scope = anyio.CancelScope()
    agent = AgentTask(
        FdSendStream(client_out, pollable=True, owned=True),
        FdReceiveStream(client_in, pollable=True),
        scope,
    )

    async def serve() -> None:
        try:
            with scope:
                await _serve(env, agent_in, agent_out, launcher)
        finally:
            agent.stopped.set()

    try:
        with _process_environment(env):
            async with _agent_log(log, env), anyio.create_task_group() as tasks:
                tasks.start_soon(serve)
                try:
                    yield agent
                finally:
                    with anyio.CancelScope(shield=True):
                        await agent.stdin.aclose()
                        with anyio.move_on_after(STOP_WAIT) as waited:
                            await agent.stopped.wait()
                        tasks.cancel_scope.cancel()
                assert not waited.cancelled_caught, f"the agent did not stop within {STOP_WAIT:g}s"
    finally:
        with suppress(OSError):
            anyio.notify_closing(client_in)
            os.close(client_in)
