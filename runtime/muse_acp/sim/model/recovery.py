"""Closing a turn that a host process left unfinished when it died.

Contract: ``reconcile`` runs when a process resumes a session whose log shows a turn in
progress that no live process is running (its holder crashed or was killed). It records and
sends what a real host reports after such a loss: pending approvals resolved ``abort``, pending
questions settled ``aborted``, items still in progress completed ``cancelled``, then
``turn/completed`` ``cancelled`` with the reason ``resume_reconcile:orphaned_by_process_loss``.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final

from muse_acp.sim.state.session import LiveSession, Position
from muse_acp_wire.msp import (
    ApprovalResolvedParams,
    ItemEventParams,
    TurnCompletedParams,
    UserInputSettledParams,
)

__all__ = ["ORPHANED_REASON", "reconcile"]

ORPHANED_REASON: Final = "resume_reconcile:orphaned_by_process_loss"


def _aborted(
    session_id: str, approval_id: str, asked: dict[str, Any], pos: Position
) -> ApprovalResolvedParams:
    return ApprovalResolvedParams(
        session_id=session_id,
        view_cursor=pos.cursor,
        source_range=pos.source_range,
        approval_id=approval_id,
        item_id=asked["itemId"],
        turn_id=asked["turnId"],
        decision="abort",
        policy_result="deny",
        resolved_by="user",
        stage_evidence=[],
    )


def _abandoned(session_id: str, user_input_id: str, pos: Position) -> UserInputSettledParams:
    return UserInputSettledParams(
        session_id=session_id,
        view_cursor=pos.cursor,
        source_range=pos.source_range,
        user_input_id=user_input_id,
        outcome="aborted",
        answers=None,
        clarification=None,
        reason="the host process ended",
    )


def _closed(session_id: str, item: dict[str, Any], pos: Position) -> ItemEventParams:
    return ItemEventParams.model_validate(
        {
            "sessionId": session_id,
            "viewCursor": pos.cursor,
            "sourceRange": pos.source_range,
            "item": item,
        }
    )


async def reconcile(session: LiveSession) -> None:
    fold = session.fold
    turn_id = fold.active_turn
    if turn_id is None:
        return
    sid = session.session_id
    for ask_id, pending in list(fold.pending.items()):
        if pending.kind == "approval":
            await session.emit("approval/resolved", partial(_aborted, sid, ask_id, pending.params))
        else:
            await session.emit("userInput/settled", partial(_abandoned, sid, ask_id))
    for item in list(fold.items.values()):
        if item.get("turnId") == turn_id and item.get("status") == "inProgress":
            closed = {**item, "revision": item["revision"] + 1, "status": "cancelled"}
            await session.emit(
                "item/completed", partial(_closed, sid, closed), item_id=item["itemId"]
            )
    # Stored as idle before the end is announced, as a turn that ends normally is.
    _, body = session.record(
        "turn/completed",
        lambda pos: TurnCompletedParams(
            session_id=sid,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            turn_id=turn_id,
            terminal="cancelled",
            reason=ORPHANED_REASON,
        ),
    )
    session.update(active_turn_id=None, turn_count=fold.turn_count)
    await session.send_recorded([("turn/completed", body)])
