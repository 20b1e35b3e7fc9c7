"""Running an ACP agent as a child process (see ``muse_acp.children`` for the discipline).

Contract: ``spawn_agent`` starts the agent in its own process group with piped stdio and yields
an ``AgentProcess``. Every stderr line (cut to ``STDERR_LINE_LIMIT`` characters) goes to the
``on_stderr`` callback, which by default writes it to this process's stderr, and the last
``STDERR_TAIL_LINES`` lines are kept for error reports. Leaving the block always reaps the
agent and its process group.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Final

from muse_acp.children import EXIT_GRACE, ChildProcess, spawn_child

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


def forward_to_stderr(line: str) -> None:
    """The default ``on_stderr``: copy the agent's line to this process's stderr."""
    stream = sys.stderr
    if stream is not None:
        stream.write(line + "\n")
        stream.flush()


AgentProcess = ChildProcess
"""A running agent child (see ``muse_acp.children``)."""


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
    async with spawn_child(
        argv,
        cwd=cwd,
        env=environment,
        on_line=on_stderr,
        tail_lines=STDERR_TAIL_LINES,
        line_limit=STDERR_LINE_LIMIT,
    ) as agent:
        yield agent
