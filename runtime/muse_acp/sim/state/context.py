"""What every part of the simulated host shares: configuration, storage, output and sessions.

Contract: one ``HostContext`` per process. It owns the sessions this process has loaded (each
behind its lease) and answers "where is session X?" for every handler: ``live`` for commands,
which need the session loaded here (-32020 when it does not exist, -32024 when it is not loaded
here), ``view`` for lease-free reads, which work on any stored session and report it
``notLoaded`` unless this process holds it, and ``load`` for resumes (-32021 when another
process holds the lease). ``spawn`` runs background work (turns) in the host's task group.

It also sends the notifications that are not view events (they have no place in a session's
log): ``notify`` sends one now and ``notify_after`` once a request's answer is written, each
only when the simulated version's schema publishes that method; ``list_changed`` sends a
session's list row as ``session/listChanged`` to a connection granted ``sessionListStream``, and
``usage`` keeps the subscription usage ``usage/read`` and ``usage/changed`` report.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from muse_acp.rpc import (
    Connection,
    ConnectionClosed,
    Payload,
    RequestContext,
    RpcError,
    encode_value,
)
from muse_acp.sim.options.settings import ServeOptions
from muse_acp.sim.state import errors
from muse_acp.sim.state.fold import Fold
from muse_acp.sim.state.ids import now_ms
from muse_acp.sim.state.profile import HostProfile
from muse_acp.sim.state.session import LiveSession, session_model
from muse_acp.sim.state.store import SessionMeta, Store
from muse_acp.sim.state.wire import Outbox, RequestLedger
from muse_acp_wire._base import WireModel
from muse_acp_wire.msp import (
    Session,
    SessionListChangedParams,
    SubscriptionUsage,
    UsageWeekly,
    UsageWindow,
)

__all__ = ["ClientInfo", "HostContext", "SessionView", "UsageMeter"]

logger: Final = logging.getLogger("muse_acp.sim")

ANSWER_WAIT: Final = 5.0
"""Seconds an event that follows an answer waits for it before going out anyway."""
USAGE_WINDOW_MINS: Final = 300
USAGE_TIER: Final = "muse-sim"
WEEK_MS: Final = 7 * 24 * 3600 * 1000


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


class UsageMeter:
    """Subscription usage as this host process last observed it: nothing until a turn ends;
    then every turn that ended adds one percent to the window and the week counts one percent
    per ten turns."""

    def __init__(self) -> None:
        self._turns = 0
        self._since_ms = now_ms()
        self.current: SubscriptionUsage | None = None

    def observe_turn(self) -> SubscriptionUsage:
        self._turns += 1
        self.current = SubscriptionUsage(
            window=UsageWindow(
                used_percent=self._turns,
                window_duration_mins=USAGE_WINDOW_MINS,
                resets_at_ms=self._since_ms + USAGE_WINDOW_MINS * 60_000,
            ),
            weekly=UsageWeekly(
                used_percent=self._turns // 10, resets_at_ms=self._since_ms + WEEK_MS
            ),
            tier=USAGE_TIER,
            observed_at_ms=now_ms(),
        )
        return self.current


class HostContext:
    """See the module contract."""

    def __init__(self, profile: HostProfile, options: ServeOptions, outbox: Outbox) -> None:
        self.profile = profile
        self.options = options
        self.outbox = outbox
        self.store = Store(options.home, ephemeral=options.no_session_log)
        self.sessions: dict[str, LiveSession] = {}
        self.client = ClientInfo(name="")
        self.granted: frozenset[str] = frozenset()
        """The capabilities ``initialize`` granted this connection."""
        self.usage = UsageMeter()
        self.ledger = RequestLedger()
        self._after: dict[object, list[tuple[str, bytes]]] = {}
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

    async def ask_client(self, method: str, params: Payload, settled: anyio.Event) -> None:
        """Send a host request (``approval/request``, ``userInput/request``) and stop caring
        once ``settled`` is set: clients may reply ``{}``, with an error, or not at all."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._request_quietly, method, params)
            await settled.wait()
            group.cancel_scope.cancel()

    async def reissue(self, method: str, params: Payload) -> None:
        """Send a pending host request again (after ``session/resume``); the client's reply is
        a receipt only, and any reply (or none, until the connection ends) will do."""
        await self._request_quietly(method, params)

    async def _request_quietly(self, method: str, params: Payload) -> None:
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
        """Send an already recorded event once the answer to ``request`` is written; events
        queued behind one answer go out in the order they were queued."""
        queued = self._after.get(request.request_id)
        if queued is None:
            queued = self._after[request.request_id] = []
            self.spawn(self._send_after, self.answered(request), request.request_id)
        queued.append((method, params))

    async def _send_after(self, answered: anyio.Event, request_id: object) -> None:
        with anyio.move_on_after(ANSWER_WAIT):
            await answered.wait()
        for method, params in self._after.pop(request_id, []):
            await self.outbox.send_event(method, params)

    async def notify(self, method: str, params: WireModel) -> None:
        """Send a notification that is not a view event, if this version publishes it."""
        if self.profile.publishes(method):
            await self.outbox.send_event(method, encode_value(params))

    def notify_after(self, request: RequestContext, method: str, params: WireModel) -> None:
        """``notify`` once the answer to ``request`` is written."""
        if self.profile.publishes(method):
            self.send_after(request, method, encode_value(params))

    @property
    def streams_list(self) -> bool:
        """The connection was granted ``sessionListStream`` and may get ``session/listChanged``."""
        return "sessionListStream" in self.granted and self.profile.publishes("session/listChanged")

    def list_row(self, meta: SessionMeta, *, status: str | None = None) -> Session:
        """A session's ``session/list`` row as this process sees it."""
        live = self.sessions.get(meta.session_id)
        if live is not None:
            fold, path = live.fold, live.path
            status = status or ("running" if fold.active_turn else "idle")
        else:
            fold = Fold(active_turn=meta.active_turn_id)
            path = "" if self.store.ephemeral else str(self.store.log(meta.session_id).path)
            status = status or "notLoaded"
        return session_model(
            self.profile, meta, fold, path=path, status=status, with_approval_mode=False
        )

    def _list_params(self, meta: SessionMeta, status: str | None) -> bytes | None:
        if not self.streams_list:
            return None
        return encode_value(SessionListChangedParams(session=self.list_row(meta, status=status)))

    async def list_changed(self, meta: SessionMeta, *, status: str | None = None) -> None:
        """Send ``session/listChanged`` with the row of ``meta`` to a connection that streams
        the session list (see ``streams_list``)."""
        params = self._list_params(meta, status)
        if params is not None:
            await self.outbox.send_event("session/listChanged", params)

    def list_changed_after(
        self, request: RequestContext, meta: SessionMeta, *, status: str | None = None
    ) -> None:
        """``list_changed`` once the answer to ``request`` is written."""
        params = self._list_params(meta, status)
        if params is not None:
            self.send_after(request, "session/listChanged", params)

    def adopt(self, meta: SessionMeta, outbox: Outbox | None = None) -> LiveSession:
        """Create a new session's storage and hold it (its id must be fresh); its events go to
        ``outbox`` (default: this connection's)."""
        lease = self.store.create(meta)
        if lease is None:
            raise errors.session_in_use(meta.session_id)
        log = self.store.log(meta.session_id)
        log.open_for_append()
        session = LiveSession(meta, Fold(), log, lease, outbox or self.outbox, self.store)
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
