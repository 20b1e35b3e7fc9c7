"""A turn Muse wakes for the session goal, followed through the prompt that woke it.

Contract: a ``GoalWatch`` listens to the session's events on a host from before a goal command
is sent (``start``) until ``follow_goal_turn`` hands them, with no moment in between, to the
``ActiveTurn`` that follows the turn the command's acknowledgement named (``turnId``): the
goal Muse announces (``session/goalChanged``) is relayed at once, the other events that came
first (at most ``MAX_HELD_EVENTS``) go to the turn in arrival order, which keeps its own and drops
the rest. The turn is then run as the prompt's own: its output streams into the prompt, its
approvals and questions are asked, ``session/cancel`` interrupts it in Muse (``turn/interrupt``,
after which Muse pauses the goal), and a prompt sent meanwhile waits in the session's line until
it ends. Work it leaves running goes on being relayed after it (``background``), and a turn Muse
takes by itself next is followed (``waiting_turn``); a host left in an unknown state is closed.
"""

from __future__ import annotations

import anyio

from muse_acp.agent.announcements.session_state import SessionState
from muse_acp.agent.context import AgentContext
from muse_acp.agent.prompts.waiting_turn import taking_up, translator_for
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.goal_state import goal_update
from muse_acp.agent.turns.background import keep_relaying
from muse_acp.agent.turns.turn import MAX_HELD_EVENTS, ActiveTurn
from muse_acp.agent.turns.work import SessionWork
from muse_acp.host.client import Listening, MspHost
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["GoalWatch", "follow_goal_turn"]


class GoalWatch:
    """A session's events on ``host`` around one goal command (see the module contract)."""

    def __init__(self, session: AcpSession, host: MspHost) -> None:
        self._session = session
        self._host = host
        self._early: list[tuple[str, WireModel]] = []
        self._listening: Listening | None = None
        self.announced = anyio.Event()
        """Set once Muse announced a goal after ``start``."""

    def start(self) -> None:
        self._listening = self._host.listen(self._session.session_id, self._on_event)

    def close(self) -> None:
        """Stop listening (idempotent; a turn that took over keeps its own registration)."""
        if self._listening is not None:
            self._listening.close()

    def take(self) -> list[tuple[str, WireModel]]:
        """The events held so far, for the turn that takes over (the watch keeps none)."""
        early, self._early = self._early, []
        return early

    async def _on_event(self, method: str, params: WireModel) -> None:
        if isinstance(params, msp.SessionGoalChangedParams):
            await self._session.outlet.send(goal_update(params.goal))
            self.announced.set()
        elif len(self._early) < MAX_HELD_EVENTS:
            self._early.append((method, params))


async def follow_goal_turn(
    ctx: AgentContext,
    session: AcpSession,
    work: SessionWork,
    host: MspHost,
    turn_id: str,
    watch: GoalWatch,
) -> acp.StopReason:
    """Follow ``turn_id`` as ``work``'s turn until it settles; the caller holds ``host`` and
    ``watch`` listens on it (see the module contract).

    Raises:
        RpcError: the turn failed (as ``ActiveTurn.rejoin``).
    """
    translator = translator_for(ctx, session, host)
    turn = ActiveTurn(session, host, translator, ctx.turn_options, SessionState(ctx, session))
    # Work that outlives the turn keeps updating its cards, and the turn Muse may start by
    # itself for the goal once this one ends is followed, as this prompt ends (``ending``).
    keep_relaying(host, session.session_id, turn.relay, taking_up(ctx, session))
    work.ending = lambda: turn.settled
    turn.interrupts = True  # Stop pauses the goal in Muse: it wakes no turn again at once
    session.turn = turn
    try:
        with work.running(turn):
            # No await before the turn listens: the watch hands over without a gap.
            return await turn.rejoin(turn_id, watch.take())
    finally:
        session.turn = None
        watch.close()
        if turn.host_unsettled or host.dead.is_set():
            session.execution.close()
