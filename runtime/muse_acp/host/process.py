"""Running one ``muse serve`` child process (see ``muse_acp.children`` for the discipline).

The host runs in its own process group with its stderr always read; each stderr line is logged
at debug level and the last lines are kept, so an error about a host that died can quote its
last words (redacted and bounded by the caller).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Final

from muse_acp.children import ChildProcess, spawn_child

__all__ = ["HostProcess", "spawn_host"]

logger: Final = logging.getLogger("muse_acp.host")

HostProcess = ChildProcess
STDERR_TAIL_LINES: Final = 40
STDERR_LINE_LIMIT: Final = 400


@asynccontextmanager
async def spawn_host(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[HostProcess]:
    """Start ``argv`` (``muse serve ...``) and yield it; on exit the process is always reaped."""

    def log_line(line: str) -> None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("host stderr: %s", line)

    async with spawn_child(
        argv,
        cwd=cwd,
        env=env,
        on_line=log_line,
        tail_lines=STDERR_TAIL_LINES,
        line_limit=STDERR_LINE_LIMIT,
    ) as host:
        yield host
