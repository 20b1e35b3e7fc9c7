"""Turns Muse runs that no prompt started: one kept waiting on the user, one it starts itself.

Contract: a session that comes back with a turn in progress in Muse (its row's ``activeTurnId``:
Muse keeps a turn waiting on an approval or a question across hosts) is occupied by it at once
(``claim``): a prompt sent while it waits on the user is refused (-32600, saying so and how to
cancel it), one sent once the user answered waits (within the cancel budget) for its end. Once
the load or resume is answered, ``take_up`` attaches the session (``session/resume``; Muse sends
its pending requests again, also read back with ``approval/listPending``) and follows the turn
(``follow_kept``) as a prompt's: permission requests with the tool card, question forms, output
as session updates; ``session/cancel`` cancels it in Muse. A prompt whose new host finds such a
turn follows it first, as it does a turn Muse started by itself right after that resume (a goal's:
``muse_started``). No turn left: nothing to follow; a failure is said in the chat. A turn
Muse starts by itself (for its goal) while no turn listens comes from the session's follower
(``taking_up``, ``background``): lined up first in the session's line, then followed the same way
with no prompt open (``follow_started``), ``session/cancel`` interrupting it (``turn/interrupt``).
"""

from __future__ import annotations

import logging
from typing import Final

from muse_acp.agent.announcements.session_state import SessionState
from muse_acp.agent.cards.child_sessions import stoppable_kinds
from muse_acp.agent.cards.output_cards import OutputPolicy
from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.plans import PLAN_MODE
from muse_acp.agent.translation.translate import TurnTranslator
from muse_acp.agent.turns.background import TurnWake, keep_relaying
from muse_acp.agent.turns.turn import MAX_HELD_EVENTS, ActiveTurn
from muse_acp.agent.turns.work import SessionWork
from muse_acp.host.client import EventListener, Listening, MspHost
from muse_acp.ids import new_uuid7
from muse_acp.rpc import RpcError
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = [
    "MUSE_TURN",
    "WAITING_TURN",
    "claim",
    "early_events",
    "follow_kept",
    "follow_started",
    "muse_started",
    "take_up",
    "take_up_soon",
    "taking_up",
    "translator_for",
]

logger: Final = logging.getLogger("muse_acp.agent")

WAITING_TURN: Final = (
    "a turn Muse kept from before the session was opened (it may be waiting for your answer to "
    "an approval or a question)"
)
"""The activity of a taken-up turn, as a refused prompt names it."""
MUSE_TURN: Final = "a turn Muse started by itself to work on the session goal"


def claim(session: AcpSession, row: msp.Session) -> SessionWork | None:
    """Occupy ``session`` with the turn Muse reports in progress in ``row``, if any. Until the
    turn is found asking the user, a prompt waits for it (often Muse has just closed it: a
    cancel or a close was settling when the session was opened)."""
    if row.active_turn_id is None or not session.on_host:
        return None
    work = session.begin(WAITING_TURN)
    work.ending = lambda: True
    # Finding out takes a host's start and a resume: bounded by the startup budget.
    work.ending_within = session.hosting.config.deadlines.startup
    return work


def early_events() -> tuple[list[tuple[str, WireModel]], EventListener]:
    """A bounded list of a session's events and the listener that fills it: what a host sends
    right after attaching the session, before any turn listens (``ExecutionHost.ready``)."""
    early: list[tuple[str, WireModel]] = []

    async def keep(method: str, params: WireModel) -> None:
        if len(early) < MAX_HELD_EVENTS:
            early.append((method, params))

    return early, keep


def muse_started(early: list[tuple[str, WireModel]]) -> str | None:
    """The first turn Muse started by itself among ``early``, the session's events since a
    host attached it (a goal's turn, started right after ``session/resume``); None: none. One
    that ended there too is followed all the same: its output is still to show."""
    for _, params in early:
        if isinstance(params, msp.TurnStartedParams):
            return params.turn_id
    return None


async def _still_pending(
    ctx: AgentContext, host: MspHost, session_id: str
) -> list[tuple[str, WireModel]]:
    """The session's pending approvals and questions, read back (``approval/listPending``), as
    the events that asked them: what Muse sent again may have gone by before anything listened
    (a command's host attached the session). Repeats are ignored by the turn; a failed read
    leaves what Muse sent again."""
    params = msp.ApprovalListPendingParams(session_id=session_id)
    budget = ctx.config.deadlines.read
    try:
        listed = await ask(
            host,
            "approval/listPending",
            params,
            msp.ApprovalListPendingResult,
            phase="reading",
            budget=budget,
        )
    except RpcError as error:
        logger.warning("session %s: pending requests not read back: %s", session_id, error.message)
        return []
    asked: list[tuple[str, WireModel]] = [("approval/requested", a) for a in listed.approvals]
    return asked + [("userInput/requested", q) for q in listed.user_inputs]


def _asking(turn: ActiveTurn) -> bool:
    """The turn is putting an approval or a question to the user right now."""
    return turn.interactions.waiting_on_client()


def translator_for(ctx: AgentContext, session: AcpSession, host: MspHost) -> TurnTranslator:
    """The translator of a turn of ``session`` on ``host``, whoever started it: stored output
    references and live terminals as the client negotiated them and the host offers them,
    children stoppable as the host can, a Markdown plan in Plan mode."""
    output = OutputPolicy(
        references=ctx.negotiated.output and host.features.has("storedOutput"),
        terminal=ctx.negotiated.terminal_output,
    )
    return TurnTranslator(
        session_id=session.session_id,
        output=output,
        cwd=session.cwd,
        plan_mode=session.settings.mode_id == PLAN_MODE,
        stoppable_children=stoppable_kinds(host.features),
    )


async def follow_kept(
    ctx: AgentContext,
    session: AcpSession,
    work: SessionWork,
    host: MspHost,
    turn_id: str,
    early: list[tuple[str, WireModel]],
    *,
    alone: bool = False,
    started: bool = False,
) -> acp.StopReason:
    """Follow ``turn_id``, the turn Muse kept in progress, as ``work``'s turn until it settles;
    ``alone``: ``work`` is that turn only, so a prompt sent once the user answered waits for
    the turn's end instead of being refused; ``started``: a turn Muse has just started by itself
    (nothing to read back; Stop interrupts it, and Muse pauses its goal).

    Raises:
        RpcError: the turn failed (as ``ActiveTurn.run``).
    """
    if not started:
        early.extend(await _still_pending(ctx, host, session.session_id))
    translator = translator_for(ctx, session, host)
    turn = ActiveTurn(session, host, translator, ctx.turn_options, SessionState(ctx, session))
    turn.interrupts = started
    # Work that outlives the turn keeps updating its cards, and Muse's next turn is followed.
    keep_relaying(host, session.session_id, turn.relay, taking_up(ctx, session))
    async with session.execution.holding(host):
        session.turn = turn
        if alone:
            work.ending = lambda: turn.acknowledged.is_set() and not _asking(turn)
            work.ending_within = None
        else:
            work.ending = lambda: turn.settled
        try:
            with work.running(turn):
                return await turn.rejoin(turn_id, early)
        finally:
            session.turn = None
            if turn.host_unsettled or host.dead.is_set():
                session.execution.close()


def taking_up(ctx: AgentContext, session: AcpSession) -> TurnWake:
    """What takes up a turn Muse starts on ``session`` by itself (for its goal) while no turn
    of the session listens (``background``): taken when the session is free or its work has
    settled its turn, and then lined up first; its events are held from its ``turn/started``
    on, and it is followed (``follow_started``) as soon as it has the session."""

    def woken(host: MspHost, params: msp.TurnStartedParams) -> bool:
        current = session.work
        if session.closed or host is not session.execution.host:
            return False
        if current is not None and not current.ending():
            logger.info(
                "session %s: Muse started turn %s while busy", session.session_id, params.turn_id
            )
            return False
        work = session.line_up_first(MUSE_TURN)
        early, keep = early_events()
        listening = host.listen(session.session_id, keep)  # no gap until the turn listens
        ctx.hosting.tasks.start_soon(
            follow_started, ctx, session, work, host, params.turn_id, early, listening
        )
        return True

    return woken


async def follow_started(
    ctx: AgentContext,
    session: AcpSession,
    work: SessionWork,
    host: MspHost,
    turn_id: str,
    early: list[tuple[str, WireModel]],
    listening: Listening,
) -> None:
    """Follow ``turn_id``, a turn Muse started by itself, once ``work`` has the session; a
    cancel that came first stops it in Muse all the same. Always ends ``work``."""
    try:
        if await session.wait_turn(work):
            stop = await follow_kept(ctx, session, work, host, turn_id, early, started=True)
            logger.info(
                "session %s: Muse's own turn %s ended: %s", session.session_id, turn_id, stop
            )
        elif not host.dead.is_set() and not session.closed:
            params = msp.TurnInterruptParams(
                command_id=new_uuid7(), session_id=session.session_id, turn_id=turn_id
            )
            budget = ctx.config.deadlines.cancel
            await ask(
                host,
                "turn/interrupt",
                params,
                msp.TurnCommandResult,
                phase="cancelling",
                budget=budget,
            )
    except RpcError as error:
        if not session.closed and not work.cancel_requested:
            await session.tell(
                Notice(
                    "error",
                    "muse-acp could not follow the turn Muse started",
                    "muse-acp could not follow the turn Muse started by itself in this session "
                    f"(to work on its goal): {error.message}",
                )
            )
    finally:
        listening.close()
        session.end(work)


async def take_up(ctx: AgentContext, session: AcpSession, work: SessionWork) -> None:
    """Follow the turn ``work`` stands for until it settles (see the module contract); always
    ends ``work``."""
    early, keep = early_events()
    try:
        host = await session.execution.ready(early=keep)
        turn_id = session.execution.take_resumed_turn()
        if turn_id is None:
            early.clear()
            logger.info("session %s: Muse had no turn left to take up", session.session_id)
            return
        stop = await follow_kept(ctx, session, work, host, turn_id, early, alone=True)
        logger.info("session %s: taken-up turn %s ended: %s", session.session_id, turn_id, stop)
    except RpcError as error:
        if not session.closed and not work.cancel_requested:
            await session.tell(
                Notice(
                    "error",
                    "muse-acp could not take up the turn Muse had in progress",
                    "muse-acp could not take up the turn Muse had in progress in this session "
                    f"when it was opened: {error.message}",
                )
            )
    finally:
        session.end(work)


async def take_up_soon(ctx: AgentContext, session: AcpSession, work: SessionWork) -> None:
    """``take_up`` in the agent's task group (a follow-up of the load or resume answer, which
    must not wait for the user's answer)."""
    ctx.hosting.tasks.start_soon(take_up, ctx, session, work)
