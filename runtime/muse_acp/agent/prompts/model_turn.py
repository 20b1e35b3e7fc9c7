"""One model turn for work that occupies a session: a prompt, or a command that is a turn by
design (``/review``).

Contract: ``run_turn`` gets the session's execution host ready (a cancel while it starts
resolves ``cancelled``; a model Muse refuses puts the session back on the model it last
accepted, then fails), drops an effort the session's model does not offer, reading the catalog
first when none is known or waiting for the read under way (``catalog.catalog_for_turn``,
``check_turn_effort``), writes ``turn/start`` (``submission``), then runs one ``ActiveTurn``
until it settles (``run_submitted``, where an ``early_prompt`` comes in) and returns its stop
reason. ``extra_flags`` restrict that one turn's host further than the session's mode does (a
review runs with writes and shell disabled); the host restarts whenever its flags change. Turns
Muse runs first are followed: one it kept waiting on the user (``waiting_turn``), one it started
by itself right after a resume (a goal's), one it runs ahead of this one's (``lead_turn``). A
host the turn left in an unknown state is closed; on a kept one the session's events go on being
relayed after the turn (``background``). Apart for commands' sake."""

from __future__ import annotations

from muse_acp.agent.announcements.catalog import (
    catalog_for_turn,
    check_turn_effort,
    fall_back_model,
    read_soon,
)
from muse_acp.agent.announcements.session_state import SessionState
from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors import failures
from muse_acp.agent.options.config_options import turn_effort
from muse_acp.agent.prompts.lead_turn import following_leads
from muse_acp.agent.prompts.waiting_turn import (
    early_events,
    follow_kept,
    muse_started,
    taking_up,
    translator_for,
)
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.turns.background import keep_relaying
from muse_acp.agent.turns.submission import Submission, submit, turn_start_params
from muse_acp.agent.turns.turn import MAX_HELD_EVENTS, ActiveTurn
from muse_acp.agent.turns.work import SessionWork
from muse_acp.host.client import MspHost
from muse_acp_wire import acp, msp

__all__ = ["run_submitted", "run_turn", "unsent_roots"]


async def run_turn(
    ctx: AgentContext,
    session: AcpSession,
    work: SessionWork,
    parts: list[msp.TurnInputPart],
    edited: set[str] | None = None,
    *,
    extra_flags: tuple[str, ...] = (),
) -> acp.StopReason:
    """Run one model turn for ``work``, which must occupy ``session``; the files its editing
    tools changed are added to ``edited`` (see ``card_states.TurnCards.edited_paths``)."""
    early, keep = early_events()
    with work.interruptibly() as starting:
        try:
            host = await session.execution.ready(extra_flags, early=keep)
        except failures.ModelRefusal:
            await fall_back_model(ctx, session)
            raise
        if session.settings.effort is not None:
            await catalog_for_turn(ctx, session)  # the model's tiers decide whether it is sent
    if starting.cancelled_caught:
        return "cancelled"
    kept = session.execution.take_resumed_turn()
    # Muse kept a turn waiting on the user (the last host went away): it is asked through this
    # prompt (a cancel cancels it) and must end before Muse would start the prompt's own turn.
    if kept is not None and await follow_kept(ctx, session, work, host, kept, early) == "cancelled":
        return "cancelled"
    if work.cancel_requested:
        return "cancelled"
    await check_turn_effort(ctx, session)
    # Muse may start a turn by itself once the host resumed the session (its goal is active):
    # followed as a kept one (else it would be invisible, and this turn queued behind it).
    started = muse_started(early)
    if started is not None:
        stop = await follow_kept(ctx, session, work, host, started, early, started=True)
        if stop == "cancelled" or work.cancel_requested:
            return "cancelled"
    early.clear()
    if work.cancel_requested:  # nothing was sent to Muse for it yet
        return "cancelled"
    roots = unsent_roots(session, host)
    # ``turn/start`` goes out first: Muse starts on it while the turn is set up here (the
    # session's events wait meanwhile, ``submission``).
    params = turn_start_params(session.session_id, parts, turn_effort(session.settings), roots)
    submission = await submit(
        host, params, budget=ctx.turn_options.deadlines.submit, hold_limit=MAX_HELD_EVENTS
    )
    return await run_submitted(ctx, session, work, host, submission, roots, edited)


def unsent_roots(session: AcpSession, host: MspHost) -> list[str] | None:
    """The roots ``turn/start`` names: the session's, when Muse may lack them and takes them."""
    if session.roots_unsent and host.features.has("workspaceRoots"):
        return [session.cwd, *session.further_roots]
    return None


async def run_submitted(
    ctx: AgentContext,
    session: AcpSession,
    work: SessionWork,
    host: MspHost,
    submission: Submission,
    roots: list[str] | None,
    edited: set[str] | None = None,
) -> acp.StopReason:
    """``run_turn`` from its ``turn/start`` on: the turn ``submission`` wrote on ``host`` (naming
    ``roots``) runs for ``work`` until it settles (a prompt started early comes in here)."""
    with submission.held:
        read_soon(ctx, session)  # the model menu fills in while the turn runs
        translator = translator_for(ctx, session, host)
        state = SessionState(ctx, session)
        turn = ActiveTurn(
            session, host, translator, ctx.turn_options, state, command_id=submission.command_id
        )
        # Work that outlives the turn keeps updating its cards, and a turn Muse starts by itself
        # afterwards is followed (``background``); it may start as this prompt ends (``ending``).
        keep_relaying(host, session.session_id, turn.relay, taking_up(ctx, session))
        work.ending = lambda: turn.settled
        async with session.execution.holding(host):
            session.turn = turn
            try:
                # Muse may run a turn of its own first, queueing this one (``lead_turn``).
                async with following_leads(ctx, session, host) as leads:
                    leads.watch(turn)
                    with work.running(turn):
                        return await turn.run(submission)
            finally:
                session.turn = None
                if roots is not None and turn.acknowledged.is_set():
                    session.roots_unsent = False  # the turn's start gave Muse the session's roots
                if edited is not None:
                    edited.update(translator.cards.edited_paths)
                if turn.host_unsettled or host.dead.is_set():
                    session.execution.close()
