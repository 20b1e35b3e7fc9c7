"""Small structured-concurrency helpers: a task group that lets a lone failure through
unwrapped, and waiting for the first of several events.

anyio task groups wrap any exception leaving them, even one raised by the group's own body,
in an ``ExceptionGroup``. Code that runs a connection or a process beside its main work wants
the original error (``TimeoutError``, ``ConnectionClosed``, ``RpcError``) so the one error
mapper sees it; this wrapper re-raises a group holding exactly one exception as that exception.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup


@asynccontextmanager
async def task_group() -> AsyncIterator[TaskGroup]:
    try:
        async with anyio.create_task_group() as group:
            yield group
    except BaseExceptionGroup as failed:
        if len(failed.exceptions) == 1:
            raise failed.exceptions[0] from failed.exceptions[0].__cause__
        raise


async def wait_first(*events: anyio.Event) -> None:
    """Return as soon as any of ``events`` is set."""
    if any(event.is_set() for event in events):
        return
    async with anyio.create_task_group() as waiters:

        async def until(event: anyio.Event) -> None:
            await event.wait()
            waiters.cancel_scope.cancel()

        for event in events:
            waiters.start_soon(until, event)
