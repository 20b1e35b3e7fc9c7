"""A session loaded by this host process, and how the host reports any session.

Contract: a ``LiveSession`` is a session this process holds the lease of. Its view events are
produced only by ``record`` (which gives an event its cursor, ``v:<id>:<n>`` when durable and
``v:<id>:<n>.<k>`` when live-only, and its ``sourceRange``, durable events only, item events
ranging from the item's first record; then appends a durable event to the log and folds it)
followed by sending it, or by ``emit``, which does both; so every event is logged before any
client can see it. ``session_model`` builds the ``Session`` object of any
session, loaded here or not, from its metadata and fold, in real hosts' member order.
``take_roots`` reads the ``workspaceRoots`` of a start where the version has them.

The turn side of a session (its running turn, its queue, its open asks and its background work)
is kept here but played by ``muse_acp.sim.model``: the session knows it only through the small
protocols below (``RunningTurn``, ``PendingAsk``, ``Background``), so state never imports the
model that plays on it.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

import anyio

from muse_acp.rpc import encode_value
from muse_acp.sim.script.turn_requests import Steer, StopRequest, TurnRequest
from muse_acp.sim.state import errors
from muse_acp.sim.state.fold import Fold
from muse_acp.sim.state.ids import durable_cursor, fragment_cursor, record_id, rfc3339_now
from muse_acp.sim.state.profile import HostProfile
from muse_acp.sim.state.store import EventLog, Lease, SessionMeta, Store
from muse_acp.sim.state.wire import Outbox, log_line
from muse_acp_wire._base import WireModel
from muse_acp_wire.msp import (
    ApprovalModeState,
    ForkOrigin,
    Session,
    SessionStartedParams,
    SourceRange,
    StreamPosition,
    StreamRef,
)

__all__ = [
    "Background",
    "LiveSession",
    "PendingAsk",
    "Position",
    "RunningTurn",
    "session_model",
    "take_roots",
]

_M = TypeVar("_M", bound=WireModel)


@dataclass(frozen=True, slots=True)
class Position:
    """Where an event sits in its session's view stream."""

    cursor: str
    source_range: dict[str, Any] | None
    """The event's ``SourceRange`` as JSON (the vocabulary's events take it as any object);
    None for live-only events, which have no durable record."""


def take_roots(
    profile: HostProfile, primary: str | None, roots: list[str] | None
) -> tuple[str, ...]:
    """The workspace roots a request names, primary first; () when it names none or the host
    does not take them. The first must be the session's own workspace root."""
    if not profile.workspace_roots or not roots:
        return ()
    if not all(os.path.isabs(root) for root in roots):
        raise errors.invalid_params("workspaceRoots must be absolute paths")
    if primary is not None and os.path.realpath(roots[0]) != os.path.realpath(primary):
        raise errors.invalid_params("the first of workspaceRoots must be the workspaceRoot")
    return tuple(roots)


class RunningTurn(Protocol):
    """The turn a session is playing, as the turn commands reach it (a ``TurnRunner``)."""

    @property
    def turn_id(self) -> str: ...

    @property
    def ending(self) -> bool:
        """The turn has stopped playing and is reporting its end."""
        ...

    @property
    def steering_backlog(self) -> int:
        """Steering inputs received and not answered yet."""
        ...

    @property
    def done(self) -> anyio.Event:
        """Set once the turn has ended."""
        ...

    def steer(self, steer: Steer) -> None: ...

    def stop(self, request: StopRequest) -> None: ...


class PendingAsk(Protocol):
    """An approval or a question put to the client (an ``ApprovalAsk`` or a ``QuestionAsk``),
    whose handlers tell them apart by their class."""

    @property
    def wake(self) -> anyio.Event:
        """Set when the client's answer arrives, to wake the turn that asked."""
        ...


class Background(Protocol):
    """Work that outlives its turn (a ``BackgroundWork``)."""

    ended: bool

    @property
    def turn(self) -> object:
        """The turn that started it (compared by identity only)."""
        ...

    @property
    def progress(self) -> Callable[[], Awaitable[None]]: ...

    @property
    def finish(self) -> Callable[[str], Awaitable[None]]:
        """Complete it with the given terminal status."""
        ...


class LiveSession:
    """A session whose lease this process holds (see the module contract)."""

    def __init__(
        self,
        meta: SessionMeta,
        fold: Fold,
        log: EventLog,
        lease: Lease,
        outbox: Outbox,
        store: Store,
    ) -> None:
        self.meta = meta
        self.fold = fold
        self.log = log
        self.lease = lease
        self.outbox = outbox
        self.store = store
        self.runner: RunningTurn | None = None
        self.queue: deque[TurnRequest] = deque()
        self.asks: dict[str, PendingAsk] = {}
        """Approvals and questions put to the client by this process, pending or settled."""
        self.background: dict[str, Background] = {}
        """Workflows and background tasks that outlive their turn, by run or task id."""
        self.subagents: dict[str, anyio.Event] = {}
        """Subagents held running (``sim:subagent-hold``) by subagent id: set to stop one."""
        self.todo_revision = 0
        """The number of the session's latest todo list (``session/todoListChanged``)."""
        self.roots: tuple[str, ...] = ()
        """The workspace roots ``session/start`` or a ``turn/start`` named (primary first),
        kept by this process only: the session record has its primary root alone."""
        self._fragment = 0

    @property
    def session_id(self) -> str:
        return self.meta.session_id

    @property
    def head_cursor(self) -> str:
        """The cursor of the latest durable event, or ``""`` before the first one."""
        head = self.fold.head
        return durable_cursor(self.session_id, head) if head else ""

    @property
    def path(self) -> str:
        """The session's log path as hosts report it (empty when nothing outlives the host)."""
        return "" if self.store.ephemeral else str(self.log.path)

    def model(self, profile: HostProfile) -> Session:
        """The ``Session`` object of this session, as its holder reports it."""
        status = "running" if self.fold.active_turn else "idle"
        return session_model(profile, self.meta, self.fold, path=self.path, status=status)

    async def announce(self, profile: HostProfile) -> None:
        """``session/started``, where the version publishes it (Muse's own 1.3.0 declarations
        do not): not a view event, so it has no cursor and is not logged."""
        if profile.publishes("session/started"):
            started = SessionStartedParams(session=self.model(profile))
            await self.outbox.send_event("session/started", encode_value(started))

    def update(self, **changes: Any) -> SessionMeta:
        """Change the session's metadata (``updatedAt`` too) and store it."""
        self.meta = replace(self.meta, updated_at=rfc3339_now(), **changes)
        self.store.write_meta(self.meta)
        return self.meta

    def _position(self, durable: bool, item_id: str | None) -> Position:
        sid = self.session_id
        if not durable:
            self._fragment += 1
            return Position(fragment_cursor(sid, self.fold.head, self._fragment), None)
        n = self.fold.head + 1
        first = self.fold.item_first.get(item_id, n) if item_id is not None else n
        source = SourceRange(
            stream=StreamRef(kind="session", id=sid),
            first=StreamPosition(id=record_id(sid, first), sequence=first),
            last=StreamPosition(id=record_id(sid, n), sequence=n),
        )
        return Position(durable_cursor(sid, n), source.model_dump(by_alias=True))

    def record(
        self,
        method: str,
        build: Callable[[Position], _M],
        *,
        durable: bool = True,
        item_id: str | None = None,
    ) -> tuple[_M, bytes]:
        """Give an event its position, and log and fold it when durable; nothing is sent."""
        params = build(self._position(durable, item_id))
        body = encode_value(params)
        if durable:
            self.log.append(log_line(method, body))
            self.fold.apply(method, json.loads(body))
            self._fragment = 0
        return params, body

    async def emit(
        self,
        method: str,
        build: Callable[[Position], _M],
        *,
        durable: bool = True,
        item_id: str | None = None,
    ) -> _M:
        """Produce one view event; ``build`` makes its params for the position it gets."""
        await self.outbox.pace()
        params, body = self.record(method, build, durable=durable, item_id=item_id)
        await self.outbox.send_event(method, body)
        return params

    async def send_recorded(self, recorded: list[tuple[str, bytes]]) -> None:
        """Send events ``record`` already logged, in order, each after its pacing."""
        for method, body in recorded:
            await self.outbox.pace()
            await self.outbox.send_event(method, body)


def session_model(
    profile: HostProfile,
    meta: SessionMeta,
    fold: Fold,
    *,
    path: str,
    status: str,
    with_approval_mode: bool = True,
) -> Session:
    """The ``Session`` object of a session (list rows leave ``approvalMode`` out)."""
    extra: dict[str, Any] = {}
    if with_approval_mode:
        extra["approval_mode"] = ApprovalModeState.model_validate(
            {
                "mode": meta.approval_mode,
                "source": meta.approval_source,
                "lastCommandId": meta.approval_command_id,
            }
        )
    if profile.session_names and meta.name is not None:
        extra["name"] = meta.name
    if profile.titles:
        title = meta.title or (meta.first_user_prompt[:80] if meta.first_user_prompt else None)
        if title is not None:
            extra["title"] = title
    if profile.session_names and meta.first_user_prompt is not None:
        extra["first_user_prompt"] = meta.first_user_prompt
    if profile.session_kinds:
        extra["kind"] = "root" if meta.parent_session_id is None else "subagent"
        if meta.parent_session_id is not None:
            extra["parent_session_id"] = meta.parent_session_id
    forked = ForkOrigin.model_validate(meta.forked_from) if meta.forked_from else None
    return Session(
        session_id=meta.session_id,
        path=path,
        status=status,
        active_turn_id=fold.active_turn,
        created_at=meta.created_at,
        updated_at=meta.updated_at,
        workspace_root=meta.workspace_root,
        provider_id=meta.provider_id,
        model_id=meta.model_id,
        turn_count=meta.turn_count,
        forked_from=forked,
        **extra,
    )
