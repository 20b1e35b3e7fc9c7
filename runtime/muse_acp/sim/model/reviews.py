"""Muse's own reviewer holding an approval before the user is asked (``sim:review``).

Contract: ``review_approval`` emits ``approval/reviewing`` for ``ask`` (its params are the
approval's own, as Muse's declarations say) where the version publishes it (1.4.9 on); the
reviewer then escalates, and the approval is requested of the user as ``sim:approve`` plays it.
Elsewhere it does nothing: older hosts have no reviewer to announce.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from muse_acp_wire.msp import ApprovalRequestParams

if TYPE_CHECKING:
    from muse_acp.sim.model.asks import ApprovalAsk
    from muse_acp.sim.model.turn import Turn
    from muse_acp.sim.state.session import Position

__all__ = ["review_approval"]


async def review_approval(turn: Turn, ask: ApprovalAsk) -> None:
    if not turn.ctx.profile.publishes("approval/reviewing"):
        return

    def reviewing(pos: Position) -> ApprovalRequestParams:
        requested = ask.requested(pos).model_dump(by_alias=True, exclude_none=True)
        return ApprovalRequestParams.model_validate(requested)

    await turn.session.emit("approval/reviewing", reviewing)
