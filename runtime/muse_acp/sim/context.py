"""What every part of the simulated host shares: configuration, storage, output and sessions.

Contract: one ``HostContext`` per process. It owns the sessions this process has loaded (each
behind its lease) and answers "where is session X?" for every handler: ``live`` for commands,
which need the session loaded here (-32020 when it does not exist, -32024 when it is not loaded
here), ``view`` for lease-free reads, which work on any stored session and report it
``notLoaded`` unless this process holds it, and ``load`` for resumes (-32021 when another
process holds the lease). ``spawn`` runs background work (turns) in the host's task group.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from muse_acp.rpc import Connection, ConnectionClosed, RequestContext, RpcError
from muse_acp.sim import errors
from muse_acp.sim.fold import Fold
from muse_acp.sim.profile import HostProfile
from muse_acp.sim.session import LiveSession
from muse_acp.sim.settings import ServeOptions
from muse_acp.sim.store import SessionMeta, Store
from muse_acp.sim.wire import Outbox, RequestLedger
from muse_acp_wire._base import WireModel

__all__ = ["ClientInfo", "HostContext", "SessionView"]

logger: Final = logging.getLogger("muse_acp.sim")

ANSWER_WAIT: Final = 5.0
"""Seconds an event that follows an answer waits for it before going out anyway."""


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """What the client said about itself at ``initialize``."""

    name: str
    user_input_dialogs: bool = True
    experimental: bool = False


@dataclass(frozen=True, slots=True)
class SessionView:
    """A session as a lease-free reader sees it."""

    meta: SessionMeta
    fold: Fold
    path: str
    status: str
    live: LiveSession | None


class HostContext:
    """See the module contract."""

    def __init__(self, profile: HostProfile, options: ServeOptions, outbox: Outbox) -> None:
        self.profile = profile
        self.options = options
        self.outbox = outbox
        self.store = Store(options.home, ephemeral=options.no_session_log)
        self.sessions: dict[str, LiveSession] = {}
        self.client = ClientInfo(name="")
        self.ledger = RequestLedger()
        self._conn: Connection | None = None
        self._tasks: TaskGroup | None = None

    def bind(self, conn: Connection, tasks: TaskGroup) -> None:
        self._conn = conn
        self._tasks = tasks

    @property
    def conn(self) -> Connection:
        if self._conn is None:
            raise RuntimeError("the host is not serving")
        return self._conn

    def spawn(self, func: Callable[..., Awaitable[Any]], *args: object) -> None:
        """Run ``func(*args)`` in the background; a client that went away only ends it."""
        if self._tasks is None:
            raise RuntimeError("the host is not serving")
        self._tasks.start_soon(self._guarded, func, args)

    @staticmethod
    async def _guarded(func: Callable[..., Awaitable[Any]], args: tuple[object, ...]) -> None:
        try:
            await func(*args)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionClosed):
            logger.debug("background work ended: the client is gone")

    async def ask_client(self, method: str, params: WireModel, settled: anyio.Event) -> None:
        """Send a host request (``approval/request``, ``userInput/request``) and stop caring
        once ``settled`` is set: clients may reply ``{}``, with an error, or not at all."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._request_quietly, method, params)
            await settled.wait()
            group.cancel_scope.cancel()

    async def _request_quietly(self, method: str, params: WireModel) -> None:
        try:
            await self.conn.request(method, params)
        except (RpcError, ConnectionClosed) as exc:
            logger.debug("%s was answered with an error: %s", method, exc)

    def answered(self, request: RequestContext) -> anyio.Event:
        """Set once the answer to ``request`` has been written to the client."""
        return self.outbox.writer.answered(request.request_id)

    def live(self, session_id: str) -> LiveSession:
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        if self.store.exists(session_id):
            raise errors.session_not_loaded(session_id)
        raise errors.session_not_found(session_id)

    def view(self, session_id: str) -> SessionView:
        session = self.sessions.get(session_id)
        if session is not None:
            status = "running" if session.fold.active_turn else "idle"
            return SessionView(session.meta, session.fold, session.path, status, session)
        meta = self.store.read_meta(session_id)
        if meta is None:
            raise errors.session_not_found(session_id)
        log = self.store.log(session_id)
        return SessionView(meta, Fold.from_lines(log.lines()), str(log.path), "notLoaded", None)

    def meta_of(self, session_id: str) -> SessionMeta:
        """A session's metadata, wherever it is held (-32020 when there is no such session)."""
        session = self.sessions.get(session_id)
        if session is not None:
            return session.meta
        meta = self.store.read_meta(session_id)
        if meta is None:
            raise errors.session_not_found(session_id)
        return meta

    def event_lines(self, session_id: str) -> list[bytes]:
        """A session's durable events as stored (-32020 when there is no such session)."""
        session = self.sessions.get(session_id)
        if session is not None:
            return session.log.lines()
        if not self.store.exists(session_id):
            raise errors.session_not_found(session_id)
        return self.store.log(session_id).lines()

    def send_after(self, request: RequestContext, method: str, params: bytes) -> None:
        """Send an already recorded event once the answer to ``request`` is written."""
        self.spawn(self._send_after, self.answered(request), method, params)

    async def _send_after(self, answered: anyio.Event, method: str, params: bytes) -> None:
        with anyio.move_on_after(ANSWER_WAIT):
            await answered.wait()
        await self.outbox.send_event(method, params)

    def adopt(self, meta: SessionMeta) -> LiveSession:
        """Create a new session's storage and hold it (its id must be fresh)."""
        lease = self.store.create(meta)
        if lease is None:
            raise errors.session_in_use(meta.session_id)
        log = self.store.log(meta.session_id)
        log.open_for_append()
        session = LiveSession(meta, Fold(), log, lease, self.outbox, self.store)
        self.sessions[meta.session_id] = session
        return session

    def load(self, session_id: str) -> LiveSession:
        """Hold a stored session (or return it when this process already does)."""
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        meta = self.store.read_meta(session_id)
        if meta is None:
            raise errors.session_not_found(session_id)
        lease = self.store.acquire(session_id)
        if lease is None:
            raise errors.session_in_use(session_id)
        log = self.store.log(session_id)
        log.open_for_append()
        fold = Fold.from_lines(log.lines())
        session = LiveSession(meta, fold, log, lease, self.outbox, self.store)
        self.sessions[session_id] = session
        return session

    def close(self) -> None:
        for session in self.sessions.values():
            session.log.close()
            session.lease.release()
        self.sessions.clear()
        self.store.close()
