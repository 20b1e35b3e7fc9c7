"""ACP sessions as the agent holds them: each owns its work, its hosts and its queues.

Contract: an ``AcpSession`` owns everything that runs on its behalf: its execution host, its
lease-free read host, its steering queue, the one ``SessionWork`` that occupies it and the
prompts queued behind it (``prompt_queue``); nothing about a session lives anywhere else.
``begin`` claims it for new work or refuses (-32600, saying what occupies it); ``admit_prompt``
claims it for a prompt, or queues the prompt behind the prompt that occupies it (``wait_turn``;
a turn Muse started by itself is lined up first, ``line_up_first``), and ``end`` hands it on;
``cancel(arrival)`` stops what runs and what arrived before ``arrival``, queued prompts
included; ``reading(budget)`` lends a host to a read; ``close()`` closes both hosts and leaves
the session registered as closed, so later requests get a clear error. Updates for the client
go through the session's ``outlet``, where the user's own title wins. A session's execution host
starts only once the host it must follow (``after``) is gone, so the two never race for Muse's
session lease.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Final, Protocol

import anyio

from muse_acp.agent.cards.child_sessions import parse_child_id
from muse_acp.agent.cards.output_reference import ProofCache
from muse_acp.agent.errors import failures
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.hosting.execution import ExecutionHost
from muse_acp.agent.hosting.hosts import HostKeeper
from muse_acp.agent.hosting.starting import Hosting
from muse_acp.agent.mcp.mcp_servers import McpServerSpec
from muse_acp.agent.options.config_options import SessionSettings
from muse_acp.agent.sessions.host_work import RunningWork
from muse_acp.agent.sessions.outlet import UpdateOutlet
from muse_acp.agent.translation.goal_state import GoalSeen
from muse_acp.agent.translation.status import ContextUse
from muse_acp.agent.translation.usage import PlanUse, TokenUse
from muse_acp.agent.turns.prompt_queue import PromptQueue
from muse_acp.agent.turns.steering_queue import SteeringQueue, SteerTarget
from muse_acp.agent.turns.work import CancellableTurn, SessionWork
from muse_acp.host.client import MspHost
from muse_acp.redact import redact
from muse_acp.rpc import INVALID_PARAMS, INVALID_REQUEST, RESOURCE_NOT_FOUND, Payload, RpcError
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp.text import clip
from muse_acp_wire import acp

__all__ = [
    "MAX_CLOSED_KEPT",
    "PROMPT",
    "READ_HOST_IDLE",
    "AcpSession",
    "ClientLink",
    "RunningTurn",
    "SessionRegistry",
    "check_session_id",
    "shown_id",
]

READ_HOST_IDLE: Final = 10.0
"""Seconds a read host stays up after its last read (less when the configured idle period is
shorter); a client paging an output reads far more often, and a forgotten one costs an idle
process for no longer than this."""

MAX_CLOSED_KEPT: Final = 256
"""Closed sessions remembered as closed; older ones are forgotten (memory stays bounded)."""

PROMPT: Final = "a prompt"
"""The activity of a prompt's work (a model turn or a local command)."""

_SESSION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
_ID_SHOWN: Final = 100


def _lines_up(work: SessionWork) -> bool:
    """Prompts that arrive while ``work`` runs wait in the session's line behind it."""
    return work.activity == PROMPT or work.queues_prompts


def shown_id(session_id: str) -> str:
    """A client-supplied session id as an error may quote it: redacted and bounded."""
    return redact(clip(session_id, _ID_SHOWN))


def check_session_id(session_id: str) -> str:
    """Refuse ids that could not have come from Muse (they also name files on disk)."""
    # fullmatch: with match and "$", an id ending in a line break would pass.
    if not _SESSION_ID.fullmatch(session_id):
        raise RpcError(
            INVALID_PARAMS,
            "sessionId must be 1 to 128 letters, digits, '-' or '_' starting with a letter or "
            "digit; use an id returned by session/new or session/list",
        )
    return session_id


class ClientLink(Protocol):
    """The ACP connection as a session uses it (``rpc.Connection`` is one)."""

    async def notify(self, method: str, params: Payload = None) -> None: ...

    def send_notification_nowait(
        self, frame: bytes, *, now: bool = False, hand_over: bool = False
    ) -> bool: ...

    async def request(self, method: str, params: Payload = None) -> JsonValue: ...


class RunningTurn(SteerTarget, CancellableTurn, Protocol):
    """A running turn as its session sees it: steerable and cancellable."""


@dataclass(eq=False)
class AcpSession:
    """One ACP session and what runs on its behalf (see the module contract)."""

    session_id: str
    cwd: str
    client: ClientLink
    hosting: Hosting
    settings: SessionSettings = field(default_factory=SessionSettings)
    on_host: bool = False
    """Muse already has this session (resume it), rather than a new one (start it)."""
    host_title: str | None = None
    """The title Muse reports (its title, name or first prompt)."""
    user_title: str | None = None
    """The title the user set with /rename, kept by the adapter; it wins over Muse's."""
    mcp_servers: tuple[McpServerSpec, ...] = ()
    """The editor's MCP servers for this session, passed to Muse when its host attaches it;
    held in memory only (they may carry secrets), never written to the preference store."""
    further_roots: tuple[str, ...] = ()
    """The client's additional directories, which Muse gets after ``cwd`` as ``workspaceRoots``
    (``workspace_roots``)."""
    roots_unsent: bool = False
    """Muse may not have the session's roots as they are now: the next ``turn/start`` names
    them (set when they change, or a host attaches the session by resuming it)."""
    after: HostKeeper | None = None
    """A keeper whose host must be gone before this session's execution host starts (the
    host of an earlier session of the same id, or the one a fork ran on)."""
    context: ContextUse | None = None
    """The context window's use as Muse last reported it (shown by ``/status``)."""
    tokens: TokenUse | None = None
    """The session's token totals as Muse last reported them (``session_state``)."""
    plan_usage: PlanUse | None = None
    """The account's subscription usage as Muse last reported it (Muse 1.3.0 and newer)."""
    goal: GoalSeen | None = None
    """The goal Muse last announced for the session (shown by ``/goal``); None: none seen."""
    notices: bool = False
    """The client set ``session.notices``: warnings go out as ``notice`` updates."""
    compaction: bool = False
    """The client set ``session.compaction`` (``outlet``)."""
    plans: bool = False
    """The client takes plan operations (``outlet``)."""
    subagents: bool = False
    """The client set ``subagents``: delegated work shows as child sessions."""
    closed: bool = False
    work: SessionWork | None = None
    turn: RunningTurn | None = None
    """The turn the current work runs, while it runs."""
    early_prompt: object | None = None
    """A prompt whose turn was started as it was read, until its handler takes it over
    (``prompts.early_prompt``, above this package)."""
    cancelled_through: int = 0
    """The arrival position of the latest ``session/cancel``: earlier work is cancelled."""
    execution: ExecutionHost = field(init=False)
    reader: HostKeeper = field(init=False)
    proofs: ProofCache = field(init=False, default_factory=ProofCache)
    running: RunningWork = field(init=False, default_factory=RunningWork)
    """Workflows and background tasks Muse runs for the session, by card (``_muse/task``)."""
    steering: SteeringQueue = field(init=False)
    prompts: PromptQueue = field(init=False, default_factory=PromptQueue)
    """Prompts waiting for the prompt that occupies the session (``prompt_queue``)."""
    outlet: UpdateOutlet = field(init=False, repr=False)
    """The one way the session's updates reach the client (``outlet``)."""

    def __post_init__(self) -> None:
        self.outlet = UpdateOutlet(
            self.session_id,
            self.client,
            self,
            notices=self.notices,
            compaction=self.compaction,
            plans=self.plans,
            subagents=self.subagents,
        )
        self.execution = ExecutionHost(self, self.hosting, after=self.after)
        # Background work Muse runs keeps its host (and so its cards' updates) while it runs.
        self.execution.keeper.busy = lambda: len(self.running) > 0
        self.execution.keeper.ended = self.running.clear
        idle = min(READ_HOST_IDLE, self.hosting.config.deadlines.idle)
        self.reader = HostKeeper(f"read host of {self.session_id}", self.hosting, idle=idle)
        self.steering = SteeringQueue(self._steer_target, self.hosting.config.deadlines.submit)
        self.after = None  # handed to the execution host above

    @property
    def title(self) -> str | None:
        return self.user_title or self.host_title

    @property
    def busy(self) -> str | None:
        """What occupies the session ("a prompt", ...), or None when it is idle."""
        return None if self.work is None else self.work.activity

    def _steer_target(self) -> SteerTarget | None:
        return None if self.closed else self.turn

    # -- work -----------------------------------------------------------------------------

    def begin(self, activity: str, arrival: int = 0) -> SessionWork:
        """Claim the session for ``activity``, or refuse when other work occupies it.

        Raises:
            RpcError: INVALID_REQUEST, saying what occupies the session and how to stop it.
        """
        current = self.work
        if current is not None:
            state = "being cancelled" if current.cancel_requested else "running"
            raise RpcError(
                INVALID_REQUEST,
                f"session {self.session_id} is busy with {current.activity}; wait for it to "
                "finish or cancel it with session/cancel",
                {"busy": current.activity, "state": state},
            )
        work = SessionWork(activity, arrival)
        if 0 < arrival < self.cancelled_through:
            work.cancel()  # a cancel that arrived after this request already stopped it
        self._occupy(work)
        return work

    async def admit_prompt(self, arrival: int) -> SessionWork:
        """Claim the session for a prompt, or queue the prompt behind the prompt that occupies
        it, running or being cancelled (``wait_turn`` then waits for its turn). Behind other
        work it first waits (at most the cancel budget, or the work's own ``ending_within``)
        for work that is cancelled or ending on its own, and is refused as ``begin`` refuses.

        Raises:
            RpcError: INVALID_REQUEST when other work occupies the session, or when the queue
                is full.
        """
        current = self.work
        if current is not None and not _lines_up(current):
            if current.cancel_requested or current.ending():
                cancel = self.hosting.config.deadlines.cancel
                within = cancel if current.cancel_requested else current.ending_within or cancel
                with anyio.move_on_after(within):
                    await current.finished.wait()
            current = self.work
        if current is None or not _lines_up(current):
            return self.begin(PROMPT, arrival)
        work = SessionWork(PROMPT, arrival)
        if 0 < arrival < self.cancelled_through:
            work.cancel()  # a cancel that arrived after this prompt already stopped it
        else:
            self.prompts.join(work, self.session_id, current)
        return work

    def line_up_first(self, activity: str) -> SessionWork:
        """Claim the session for a turn Muse already runs: at once when it is free, else as the
        first in line (ahead of waiting prompts, ``wait_turn``); prompts then wait behind it."""
        work = SessionWork(activity)
        work.queues_prompts = True
        if self.work is None:
            self._occupy(work)
        else:
            self.prompts.join(work, self.session_id, self.work, first=True)
        return work

    async def wait_turn(self, work: SessionWork) -> bool:
        """Wait until the session is ``work``'s (True at once when it already is), or until
        ``work``, queued, is cancelled (False: it never ran and never will)."""
        if self.work is work:
            return True
        return await self.prompts.wait(work)

    def end(self, work: SessionWork) -> None:
        """Release the session from ``work`` (which is then finished, and out of the queue),
        handing it to the next queued prompt, if one waits."""
        work.finish()
        self.prompts.leave(work)
        if self.work is work:
            self._occupy(self.prompts.call_next())

    def _occupy(self, work: SessionWork | None) -> None:
        """Hand the session to ``work`` (None: free). While work occupies it, the execution
        host does not idle out: starting and preparing it for a turn can outlast the idle
        timer, and a host closed under a turn being prepared would fail the turn."""
        if (work is None) != (self.work is None):
            self.execution.keeper.occupied(work is not None)
        self.work = work

    def cancel(self, arrival: int = 0) -> None:
        """Stop whatever runs, and every prompt (queued, or not yet admitted) and other work
        that arrived before ``arrival`` (0: everything queued)."""
        self.cancelled_through = max(self.cancelled_through, arrival)
        if self.work is not None:
            self.work.cancel()
        self.prompts.cancel(arrival)

    @asynccontextmanager
    async def reading(self, budget: float) -> AsyncIterator[MspHost]:
        """A host for a read, with ``budget`` seconds for the block (see the module contract).

        Raises:
            RpcError: an ACP failure of the read host's ``starting`` phase, or
                ``deadlineExceeded`` of the ``reading`` phase, or what the block raised.
        """
        host = self.execution.host
        if host is None or host.dead.is_set():
            async with self.reader.reading(self.cwd, budget) as reader:
                yield reader
            return
        # Paging through an output right after the turn that wrote it is the usual read: the
        # execution host is up then, and a second process would only add its start to the read.
        async with self.execution.holding(host):
            try:
                with anyio.fail_after(budget):
                    yield host
            except TimeoutError:
                raise failures.deadline_exceeded("reading", budget) from None

    def close(self) -> None:
        """Close the session: stop its work, fail its waiting corrections, stop its hosts."""
        self.closed = True
        self.cancel()
        self.steering.close()
        self.execution.close()
        self.reader.close()

    # -- the client -------------------------------------------------------------------------

    async def tell(self, notice: Notice) -> None:
        """Warn the user: a ``notice`` update, or chat text for a client without notices
        (``UpdateOutlet.tell``)."""
        await self.outlet.tell(notice)

    async def say(self, text: str) -> None:
        """Show ``text`` in the session's chat as a message of the agent."""
        await self.outlet.send(
            acp.AgentMessageChunkSessionUpdate(
                session_update="agent_message_chunk",
                content=acp.TextContentBlock(type="text", text=text),
            )
        )

    async def ask_client(self, method: str, params: Payload) -> JsonValue:
        return await self.client.request(method, params)


class SessionRegistry:
    """Every open session of this agent, and the ``MAX_CLOSED_KEPT`` most recently added closed
    ones (so a request for one of those hears that it was closed, and how to get it back)."""

    def __init__(self) -> None:
        self._sessions: dict[str, AcpSession] = {}

    def add(self, session: AcpSession) -> AcpSession:
        self._sessions.pop(session.session_id, None)
        self._sessions[session.session_id] = session
        closed = [s.session_id for s in self._sessions.values() if s.closed]
        for session_id in closed[: max(0, len(closed) - MAX_CLOSED_KEPT)]:
            del self._sessions[session_id]
        return session

    def get(self, session_id: str) -> AcpSession | None:
        return self._sessions.get(session_id)

    def open_sessions(self) -> list[AcpSession]:
        return [s for s in self._sessions.values() if not s.closed]

    def require(self, session_id: str) -> AcpSession:
        """Return the open session, or raise -32602 for an id of the wrong shape and -32002
        (saying how to get it back) for one that is not open."""
        child = parse_child_id(session_id)
        if child is not None:
            raise RpcError(
                INVALID_PARAMS,
                f"{shown_id(session_id)} is a child session of {shown_id(child.parent_id)}, "
                "which owns it: only session/load and session/cancel reach a child; send "
                "anything else to its parent",
                {"sessionId": shown_id(child.parent_id)},
            )
        session = self._sessions.get(check_session_id(session_id))
        if session is None:
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"session {shown_id(session_id)} is not open in this agent; load it with "
                "session/load or session/resume, or start a new session",
                {"sessionId": shown_id(session_id)},
            )
        if session.closed:
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"session {shown_id(session_id)} was closed; load it again with session/load "
                "or session/resume, or start a new session",
                {"sessionId": shown_id(session_id), "closed": True},
            )
        return session
