"""Read-only hosts kept per session for stored-output reads, and what was proved on each.

Contract: ``reading_output(ctx, session)`` yields a ``ReadHost``: a lease-free ``muse serve`` (no
flags, so it never competes with the session's execution host) kept for that session. The first
read starts it, the reads that follow reuse it, and it closes once no read has used it for
``READ_HOST_IDLE`` seconds, when the session closes (``discard``), when it dies, or when the agent
stops. Starting a host is bounded by the startup budget and everything done with it within one
``reading_output`` block by the read budget; running out of the first is a failure of the
``starting`` phase, running out of the second or the host ending one of the ``reading`` phase,
exactly as for the one-off hosts of ``lifecycle.reading``. A host whose read ran out of time or
lost its connection is closed, since its state is unknown, and the next read starts another.

A ``ReadHost`` also remembers, per item, the latest revision found in the session's bounded
history together with the view cursor ``session/read`` reported when it was found (at most
``MAX_PROOFS`` items, the least recently proved dropped first). ``proven`` hands it back only for
that very cursor: a cursor is the position of the newest event of the session's view stream, so
an equal one means nothing was added since and the search would find the same revision. An empty
cursor proves nothing. Proofs never outlive their host.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final

import anyio
from anyio.abc import TaskStatus

from muse_acp.agent import failures
from muse_acp.host.client import EXIT_STATUS_WAIT, HostEnded, MspHost, open_host
from muse_acp.msp_types import Item
from muse_acp.rpc import ConnectionClosed
from muse_acp.tasks import wait_first

if TYPE_CHECKING:
    from muse_acp.agent.context import AgentContext
    from muse_acp.agent.session import AcpSession

__all__ = ["MAX_PROOFS", "READ_HOST_IDLE", "ReadHost", "discard", "reading_output"]

logger: Final = logging.getLogger("muse_acp.agent")

READ_HOST_IDLE: Final = 10.0
"""Seconds a read host stays up after its last read; a client paging an output reads far more
often, and a forgotten one costs an idle process for no longer than this."""
MAX_PROOFS: Final = 256


class ReadHost:
    """One kept read-only host and the item revisions proved on it (see the module contract)."""

    def __init__(self, host: MspHost) -> None:
        self.host = host
        self.users = 0
        self.stop = anyio.Event()
        self.activity = anyio.Event()
        self._proofs: OrderedDict[str, tuple[str, Item]] = OrderedDict()

    @property
    def usable(self) -> bool:
        return not self.stop.is_set() and not self.host.dead.is_set()

    def proven(self, item_id: str, view_cursor: str) -> Item | None:
        """The item's latest revision when it was found at exactly ``view_cursor``."""
        proof = self._proofs.get(item_id)
        if proof is None or not view_cursor or proof[0] != view_cursor:
            return None
        return proof[1]

    def prove(self, item_id: str, view_cursor: str, item: Item) -> None:
        """Remember ``item`` as the latest revision of ``item_id`` at ``view_cursor``."""
        if not view_cursor:
            return
        self._proofs[item_id] = (view_cursor, item)
        self._proofs.move_to_end(item_id)
        while len(self._proofs) > MAX_PROOFS:
            self._proofs.popitem(last=False)


async def _idle_out(kept: ReadHost) -> None:
    while kept.usable:
        with anyio.move_on_after(READ_HOST_IDLE) as waited:
            await wait_first(kept.activity, kept.stop, kept.host.dead)
        kept.activity = anyio.Event()
        if waited.cancelled_caught and kept.users == 0:
            kept.stop.set()


class _Keeper:
    """Runs the read host of one session in the agent's task group, one at a time."""

    def __init__(self, ctx: AgentContext, session: AcpSession) -> None:
        self._ctx = ctx
        self._session = session
        self._current: ReadHost | None = None
        self._starting = anyio.Lock()

    async def acquire(self) -> ReadHost:
        async with self._starting:
            current = self._current
            if current is None or not current.usable:
                current = self._current = await self._ctx.tasks.start(self._serve)
            current.users += 1
            current.activity.set()
            return current

    def release(self, kept: ReadHost) -> None:
        kept.users -= 1
        kept.activity.set()

    def close(self) -> None:
        if self._current is not None:
            self._current.stop.set()
            self._current = None

    async def _serve(self, *, task_status: TaskStatus[ReadHost]) -> None:
        binary = await self._ctx.muse()
        kept: ReadHost | None = None
        try:
            async with open_host(
                binary.path,
                cwd=self._session.cwd,
                env=self._ctx.environ,
                startup_timeout=self._ctx.config.deadlines.startup,
            ) as host:
                kept = ReadHost(host)
                task_status.started(kept)
                await _idle_out(kept)
        except Exception:
            # Before it started, the error belongs to the reader that asked for the host;
            # afterwards the reads that were using it have reported it themselves.
            if kept is None:
                raise
            logger.debug("read host of session %s ended", self._session.session_id, exc_info=True)
        finally:
            if kept is not None and self._current is kept:
                self._current = None
            idle = self._current is None and not self._starting.locked()
            if idle and _KEEPERS.get(self._session) is self:
                del _KEEPERS[self._session]


async def _exit_of(host: MspHost) -> tuple[int | None, str]:
    """How a host that dropped its connection ended, once its exit status is in (bounded)."""
    with anyio.move_on_after(EXIT_STATUS_WAIT, shield=True):
        await host.process.exited.wait()
    return host.exit_summary()


# Keyed by the session object: a session loaded again is a new object with its own host.
_KEEPERS: Final[dict[AcpSession, _Keeper]] = {}


def discard(session: AcpSession) -> None:
    """Close the session's read host, if it has one (for a session that closes)."""
    keeper = _KEEPERS.pop(session, None)
    if keeper is not None:
        keeper.close()


@asynccontextmanager
async def reading_output(ctx: AgentContext, session: AcpSession) -> AsyncIterator[ReadHost]:
    """The session's read host, with the read budget applied to everything done with it."""
    deadlines = ctx.config.deadlines
    keeper = _KEEPERS.get(session)
    if keeper is None:
        keeper = _KEEPERS[session] = _Keeper(ctx, session)
    kept: ReadHost | None = None
    try:
        kept = await keeper.acquire()
        try:
            with anyio.fail_after(deadlines.read):
                yield kept
        finally:
            keeper.release(kept)
    except TimeoutError:
        keeper.close()
        if kept is None:  # the host never finished its handshake: the startup budget ran out
            raise failures.deadline_exceeded("starting", deadlines.startup, False) from None
        raise failures.deadline_exceeded("reading", deadlines.read, False) from None
    except HostEnded as ended:
        raise failures.host_exited("reading", ended.exit_code, ended.stderr_tail) from None
    except ConnectionClosed:
        keeper.close()
        code, stderr_tail = await _exit_of(kept.host) if kept is not None else (None, "")
        raise failures.host_exited("reading", code, stderr_tail) from None
