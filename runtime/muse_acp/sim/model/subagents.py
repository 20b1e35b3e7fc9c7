"""A native subagent Muse delegates to within a turn (``sim:subagent OBJECTIVE``, or
``sim:subagent-fails OBJECTIVE``).

Contract: ``run_subagent`` emits the ``subagent`` item as Muse's official transcripts show one:
started ``accepted``, then running with its own ``childSessionId``, then completed with a result
summary, or, when it fails, ``failed`` with the result's ``errorKind`` ``provider_error``; its
controls (``subagent/*``) are not in muse-acp's MSP vocabulary, so none is served.
"""

from __future__ import annotations

from muse_acp.sim.model.turn import Turn
from muse_acp.sim.state.ids import new_uuid7, rfc3339_now
from muse_acp_wire.msp import SubagentItem, SubagentResult

__all__ = ["run_subagent"]


async def run_subagent(turn: Turn, objective: str, *, fails: bool = False) -> None:
    item_id, subagent_id, child_session = new_uuid7(), f"subagent-{new_uuid7()}", new_uuid7()
    revision = 0

    def item(status: str, control: str, result: SubagentResult | None = None) -> SubagentItem:
        nonlocal revision
        revision += 1
        return SubagentItem(
            item_id=item_id,
            kind="subagent",
            turn_id=turn.turn_id,
            revision=revision,
            status=status,
            recorded_at=rfc3339_now(),
            subagent_id=subagent_id,
            agent_path=".agents/researcher.md",
            role="worker",
            depth=1,
            objective=objective,
            child_session_id=None if control == "accepted" else child_session,
            control_status=control,
            result=result,
            fallback_text=f"Subagent: {objective}",
        )

    await turn.item_event("item/started", item("inProgress", "accepted"))
    await turn.item_event("item/updated", item("inProgress", "running"))
    if fails:
        result = SubagentResult(
            summary=f"could not finish: {objective}", error_kind="provider_error"
        )
    else:
        result = SubagentResult(summary=f"done: {objective}")
    await turn.item_event(
        "item/completed", item("failed" if fails else "completed", "closed", result)
    )
