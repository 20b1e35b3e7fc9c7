"""Mid-turn steering: corrections added to the running turn, never a new turn.

Two negotiations share one implementation. ``_muse/steer`` (client ``_meta["muse/steering"]``)
names the turn it corrects and answers ``{status: "accepted", turnId}``; ``_session/steering``
(client ``_meta.steering``) may name it and answers ``{outcome: "injected"}``. Both answer only
after Muse acknowledged ``turn/steer`` for that turn.

Contract, checked in this order and all before anything is queued: the method was negotiated
(-32600), the session is open (-32002), the prompt converts like a ``session/prompt``'s
(-32602), and a turn is running that accepts steering and is the one ``expectedTurnId`` names,
if given (-32600). A ``_session/steering`` request whose ``_meta.steering.idleBehavior`` is
``promptRequired`` gets ``{outcome: "promptRequired", reason: "noRunningTurn"}`` instead of an
error when the session is idle. Without ``expectedTurnId`` the correction targets the turn
running when it arrived, never an earlier or later one.

Admitted corrections wait in one FIFO ``SteeringQueue`` per session, at most
``MAX_WAITING`` of them (-32600 beyond), and are sent one at a time. When its turn comes, a
correction is sent only if the turn it captured is still the session's running turn, with the
same id, still accepting steering; otherwise it fails (-32600) rather than reach a successor. A
correction is sent once and never retried, and no path here sends ``turn/start``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

import anyio

from muse_acp.agent.prompt_content import convert_prompt
from muse_acp.msp_types import TurnInputPart
from muse_acp.rpc import INTERNAL_ERROR, INVALID_REQUEST, RequestContext, RpcError
from muse_acp_wire import acp

if TYPE_CHECKING:
    from muse_acp.agent.context import AgentContext
    from muse_acp.agent.session import AcpSession

__all__ = [
    "MAX_WAITING",
    "SteerTarget",
    "SteeringQueue",
    "discard",
    "handle_compatible_steering",
    "handle_muse_steer",
]

MAX_WAITING: Final = 16
"""Corrections that may wait per session behind the one being sent."""
PROMPT_REQUIRED: Final = "promptRequired"


class SteerTarget(Protocol):
    """What steering needs of a running turn (``turn.ActiveTurn`` is one)."""

    @property
    def turn_id(self) -> str | None: ...

    @property
    def steerable(self) -> bool: ...

    async def steer(self, parts: list[TurnInputPart]) -> str: ...


@dataclass(eq=False)
class _Ticket:
    """One admitted correction: the turn it captured on arrival and its place in line."""

    target: SteerTarget
    turn_id: str
    ahead: int
    """Corrections in line before this one when it was admitted."""
    ready: anyio.Event = field(default_factory=anyio.Event)
    """Set when this correction may be sent, or when the line was closed."""
    closed: bool = False


class SteeringQueue:
    """One session's serial, bounded line of corrections (see the module contract).

    ``current`` returns the session's running turn now, or None once it is idle or closed.
    ``submit_budget`` bounds each send, so a correction waits at most one budget per
    correction ahead of it (plus one of slack) before it gives up unsent.
    """

    def __init__(
        self,
        current: Callable[[], SteerTarget | None],
        submit_budget: float,
        limit: int = MAX_WAITING,
    ) -> None:
        self._current = current
        self._budget = submit_budget
        self._limit = limit
        self._waiting: deque[_Ticket] = deque()
        self._sending: _Ticket | None = None

    @property
    def idle(self) -> bool:
        return self._sending is None and not self._waiting

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def admit(self, target: SteerTarget, turn_id: str) -> _Ticket:
        """Take a place in line at once (no await), so arrival order is send order.

        Raises:
            RpcError: INVALID_REQUEST when ``MAX_WAITING`` corrections already wait.
        """
        ticket = _Ticket(target, turn_id, len(self._waiting) + (self._sending is not None))
        if ticket.ahead == 0:
            self._sending = ticket
            ticket.ready.set()
        elif len(self._waiting) >= self._limit:
            raise RpcError(
                INVALID_REQUEST,
                f"{len(self._waiting)} corrections are already waiting for this turn; wait for "
                "their answers before steering again",
            )
        else:
            self._waiting.append(ticket)
        return ticket

    async def send(self, ticket: _Ticket, parts: list[TurnInputPart]) -> str:
        """Wait for ``ticket``'s turn, check its target again and send; return the turn id.

        Raises:
            RpcError: INVALID_REQUEST when the target stopped being the running turn or Muse
                refused the correction; INTERNAL_ERROR when earlier corrections held the line
                too long, or as ``SteerTarget.steer`` raises it.
        """
        try:
            with anyio.move_on_after(self._budget * (ticket.ahead + 1)):
                await ticket.ready.wait()
            if not ticket.ready.is_set():
                raise RpcError(
                    INTERNAL_ERROR,
                    "earlier corrections to this turn did not finish in time, so this one was "
                    "not sent; send it again",
                )
            if ticket.closed:
                raise RpcError(
                    INVALID_REQUEST,
                    "the session was closed before this correction's turn came, so it was not "
                    "sent; load the session again to continue",
                )
            self._check_still_running(ticket)
            return await ticket.target.steer(parts)
        finally:
            self._leave(ticket)

    def _check_still_running(self, ticket: _Ticket) -> None:
        target = ticket.target
        if (
            self._current() is not target
            or not target.steerable
            or target.turn_id != ticket.turn_id
        ):
            raise RpcError(
                INVALID_REQUEST,
                f"turn {ticket.turn_id} ended (or was cancelled or closed) before this "
                "correction's turn came, so it was not sent; steer the running turn, or send "
                "a new prompt",
                {"turnId": ticket.turn_id},
            )

    def close(self) -> None:
        """Fail every waiting correction now; the one being sent ends with the turn's host."""
        for ticket in self._waiting:
            ticket.closed = True
            ticket.ready.set()
        self._waiting.clear()

    def _leave(self, ticket: _Ticket) -> None:
        if self._sending is not ticket:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
            return
        self._sending = self._waiting.popleft() if self._waiting else None
        if self._sending is not None:
            self._sending.ready.set()


# Keyed by the session object: a session loaded again is a new object with a new line.
_QUEUES: Final[dict[AcpSession, SteeringQueue]] = {}


def _running(session: AcpSession) -> SteerTarget | None:
    return None if session.closed else session.turn


def _queue(ctx: AgentContext, session: AcpSession) -> SteeringQueue:
    queue = _QUEUES.get(session)
    if queue is None:
        queue = SteeringQueue(lambda: _running(session), ctx.config.deadlines.submit)
        _QUEUES[session] = queue
    return queue


def discard(session: AcpSession) -> None:
    """Fail the session's waiting corrections at once (for a session that closes)."""
    queue = _QUEUES.get(session)
    if queue is not None:
        queue.close()


def _target(session: AcpSession, expected_turn_id: str | None) -> tuple[SteerTarget, str]:
    turn = _running(session)
    if turn is None or turn.turn_id is None:
        raise RpcError(
            INVALID_REQUEST,
            f"session {session.session_id} has no running turn to steer, and steering never "
            "starts one; send the input with session/prompt",
        )
    if not turn.steerable:
        raise RpcError(
            INVALID_REQUEST,
            f"turn {turn.turn_id} of session {session.session_id} is ending or being "
            "cancelled and accepts no more corrections; send a new prompt once it ends",
        )
    if expected_turn_id is not None and expected_turn_id != turn.turn_id:
        raise RpcError(
            INVALID_REQUEST,
            f"turn {expected_turn_id} is not running in session {session.session_id} (turn "
            f"{turn.turn_id} is); steer the turn announced in muse/activeTurnId",
            {"activeTurnId": turn.turn_id},
        )
    return turn, turn.turn_id


async def _steer(
    ctx: AgentContext,
    session: AcpSession,
    target: SteerTarget,
    turn_id: str,
    parts: list[TurnInputPart],
) -> str:
    queue = _queue(ctx, session)
    try:
        ticket = queue.admit(target, turn_id)
        return await queue.send(ticket, parts)
    finally:
        if queue.idle and _QUEUES.get(session) is queue:
            del _QUEUES[session]


def _not_negotiated(method: str, opt_in: str) -> RpcError:
    return RpcError(
        INVALID_REQUEST,
        f"{method} was not negotiated on this connection; opt in with "
        f"clientCapabilities._meta{opt_in} at initialize",
    )


async def handle_muse_steer(
    ctx: AgentContext, params: acp.MuseSteerRequest, _: RequestContext
) -> acp.MuseSteerResponse:
    if not ctx.negotiated.steering:
        raise _not_negotiated("_muse/steer", '["muse/steering"] = 1')
    session = ctx.sessions.require(params.session_id)
    parts = convert_prompt(params.prompt)
    target, turn_id = _target(session, params.expected_turn_id)
    acknowledged = await _steer(ctx, session, target, turn_id, parts)
    return acp.MuseSteerResponse(status="accepted", turn_id=acknowledged)


def _wants_prompt_required(params: acp.SessionSteeringRequest) -> bool:
    options = params.field_meta.steering if params.field_meta is not None else None
    return options is not None and options.idle_behavior == PROMPT_REQUIRED


async def handle_compatible_steering(
    ctx: AgentContext, params: acp.SessionSteeringRequest, _: RequestContext
) -> acp.SessionSteeringResponse:
    if not ctx.negotiated.compatible_steering:
        raise _not_negotiated("_session/steering", '.steering = {"supported": true}')
    session = ctx.sessions.require(params.session_id)
    parts = convert_prompt(params.prompt)
    if session.busy is None and session.turn is None and _wants_prompt_required(params):
        return acp.SessionSteeringResponse(outcome="promptRequired", reason="noRunningTurn")
    target, turn_id = _target(session, params.expected_turn_id)
    await _steer(ctx, session, target, turn_id, parts)
    return acp.SessionSteeringResponse(outcome="injected")
