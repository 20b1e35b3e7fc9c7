"""Publishing an approval and waiting for its decisions: ``approval/requested``,
``approval/updated``, ``approval/resolved``.

Contract: ``request_approval`` publishes an ``ApprovalAsk`` (``approval/requested``, then the
``approval/request`` ask; any reply is fine) and waits for decisions; ``await_decision`` waits
on one already published. The session's approval mode applies first (``allowAll`` runs the call
unasked, never a protected write; ``denyUnmatched`` denies it). The turn emits
``approval/updated`` between stages (and records, unsent, the one of a stage the host settled
itself in the stage race) and ``approval/resolved`` at the end; a stopped turn resolves the
approval ``abort``. How a decision applies is ``muse_acp.sim.model.asks``.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Final

import anyio

from muse_acp.rpc import RawJson, encode_message
from muse_acp.sim.model.asks import ApprovalAsk, Decided
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.options.faults import exit_now
from muse_acp.sim.state.context import ANSWER_WAIT
from muse_acp.sim.state.ids import rfc3339_now
from muse_acp.sim.state.session import LiveSession, Position
from muse_acp_wire.msp import (
    ApprovalChange,
    ApprovalResolvedParams,
    ApprovalUpdatedParams,
    PolicyAmendment,
)

__all__ = ["CLIENT_DECISION", "POLICY_DECISION", "await_decision", "request_approval"]

CLIENT_DECISION: Final = "clientDecision"
"""``change.reason`` of an update caused by the client's decision."""
POLICY_DECISION: Final = "policyDecision"
"""``change.reason`` of an update caused by the host's own policy (the stage race)."""


async def _resolve(
    session: LiveSession,
    ask: ApprovalAsk,
    *,
    by: str,
    command_id: str | None,
    stamped: bool = False,
) -> None:
    """Publish ``approval/resolved``; ``stamped``: the version says when the client decided."""
    decision = ask.outcome or "abort"
    allowed = decision in ("approved", "approvedForSession")

    def build(pos: Position) -> ApprovalResolvedParams:
        resolved = ApprovalResolvedParams(
            session_id=ask.session_id,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            approval_id=ask.approval_id,
            item_id=ask.item_id,
            turn_id=ask.turn_id,
            decision=decision,
            policy_result="allow" if allowed else "deny",
            resolved_by=by,
            stage_evidence=ask.evidence(ask.resolutions),
        )
        if ask.origin is not None:
            resolved.subagent_origin = ask.origin
        if decision == "approvedForSession":
            resolved.amendment = PolicyAmendment(
                durability="session", rule_preview=ask.rule_preview()
            )
        if command_id is not None:
            resolved.decided_by_command_id = command_id
            if stamped:
                resolved.decided_at = rfc3339_now()
        return resolved

    ask.resolved_by = by
    params = await session.emit("approval/resolved", build)
    ask.resolved_cursor = params.view_cursor


def _without_cursor(body: bytes) -> bytes:
    """The encoded params with ``viewCursor`` taken out, every other member in place."""
    params = json.loads(body)
    params.pop("viewCursor", None)
    return encode_message(params)


async def request_approval(turn: Turn, ask: ApprovalAsk) -> str:
    """Put ``ask`` to the client and wait until it is settled; returns the decision."""
    session = turn.session
    mode = session.meta.approval_mode
    if mode == "allowAll" and not ask.protected:
        return "approved"
    session.asks[ask.approval_id] = ask
    turn.phase = "waiting for an approval"
    await session.outbox.pace()
    _, body = session.record("approval/requested", ask.requested)
    sent = _without_cursor(body) if ask.bare else body
    await session.outbox.send_event("approval/requested", sent)
    if mode == "denyUnmatched":
        ask.outcome = "denied"
        await _resolve(session, ask, by="policy", command_id=None)
        return "denied"
    done = anyio.Event()
    turn.ctx.spawn(turn.ctx.ask_client, "approval/request", RawJson(sent), done)
    if turn.ctx.options.faults.exits_at("approval"):
        exit_now("exit:approval")
    return await await_decision(turn, ask, done)


async def await_decision(turn: Turn, ask: ApprovalAsk, done: anyio.Event) -> str:
    """Wait until the client's decisions settle ``ask`` (which is published and registered in
    the session's asks), reporting each non-final one; ``done`` is set once it is settled.
    A stopped turn resolves it ``abort``. Returns the decision."""
    session = turn.session

    async def abandon() -> None:
        ask.outcome = ask.outcome or "abort"
        done.set()
        await _resolve(session, ask, by="user", command_id=None)

    turn.open_items[ask.approval_id] = abandon
    turn.phase = "waiting for an approval"
    try:
        while True:
            await ask.wake.wait()
            ask.wake = anyio.Event()
            while ask.decided:
                decided = ask.decided.popleft()
                with anyio.move_on_after(ANSWER_WAIT):
                    await decided.answered.wait()
                if decided.terminal:
                    del turn.open_items[ask.approval_id]
                    await _resolve(
                        session,
                        ask,
                        by="user",
                        command_id=decided.command_id,
                        stamped=turn.ctx.profile.declares("ApprovalResolvedParams", "decided_at"),
                    )
                    return ask.outcome or "abort"
                await _report(session, ask, decided)
    finally:
        done.set()
        turn.phase = "the model was working"


async def _report(session: LiveSession, ask: ApprovalAsk, decided: Decided) -> None:
    """The ``approval/updated`` of a non-final decision; in the stage race, also the update of
    the stage the host settled itself, recorded in the same instant but never sent."""
    await session.outbox.pace()
    _, body = session.record("approval/updated", partial(_updated, ask, decided))
    if decided.raced is not None:
        session.record("approval/updated", partial(_raced, ask, decided))
    await session.outbox.send_event("approval/updated", body)


def _change(ask: ApprovalAsk, index: int, choice_id: str | None, reason: str) -> ApprovalChange:
    decision = ask.decision_of(choice_id) if choice_id is not None else "approved"
    change = ApprovalChange(
        kind="stageResolved", requirement_id=ask.requirement(index), decision=decision
    )
    if choice_id is not None:
        change.choice_id = choice_id
    if ask.reasons:
        change.reason = reason
    return change


def _updated(ask: ApprovalAsk, decided: Decided, pos: Position) -> ApprovalUpdatedParams:
    """The ``approval/updated`` params reporting one non-final decision."""
    return ApprovalUpdatedParams(
        session_id=ask.session_id,
        view_cursor=pos.cursor,
        source_range=pos.source_range,
        approval_id=ask.approval_id,
        current_requirement_id=ask.requirement(decided.index + 1),
        subject=ask.subject(decided.resolutions),
        available_choices=list(ask.choices),
        change=_change(ask, decided.index, decided.choice_id, CLIENT_DECISION),
    )


def _raced(ask: ApprovalAsk, decided: Decided, pos: Position) -> ApprovalUpdatedParams:
    """The unsent ``approval/updated`` of the stage the host settled itself."""
    assert decided.raced is not None
    return ApprovalUpdatedParams(
        session_id=ask.session_id,
        view_cursor=pos.cursor,
        source_range=pos.source_range,
        approval_id=ask.approval_id,
        current_requirement_id=ask.requirement(decided.index + 2),
        subject=ask.subject(decided.raced),
        available_choices=list(ask.choices),
        change=_change(ask, decided.index + 1, None, POLICY_DECISION),
    )
