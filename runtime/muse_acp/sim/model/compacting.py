"""Compactions as hosts record them: Muse's own (``auto``) in a turn, and ``session/compact``'s.

Contract: ``compaction_items`` are the two states of one compaction item of ``trigger`` owned
by ``turn_id``: in progress, then completed (``outcome: "compacted"``, the strategy real hosts
report, ``summarizedThrough`` at the session's head, token figures made up but consistent:
``tokensAfter`` below ``tokensBefore``, which grows with the ``count`` items summarised).
``auto_compact`` is ``sim:autocompact``: Muse compacts the session's history by itself in the
middle of the turn, recorded and sent as ``item/started`` then ``item/completed``.
"""

from __future__ import annotations

from typing import Any, Final

from muse_acp.sim.model.turn import Turn
from muse_acp.sim.state.ids import new_uuid7, rfc3339_now
from muse_acp.sim.state.session import LiveSession
from muse_acp_wire.msp import CompactionItem

__all__ = ["STRATEGY", "auto_compact", "compactable", "compaction_items"]

STRATEGY: Final = "summary-v2"
"""The strategy real hosts report for a compaction."""
_TOKENS_PER_ITEM: Final = 1200


def compactable(items: list[dict[str, Any]]) -> int:
    """How many items a compaction would summarise: those after the latest compaction."""
    count = 0
    for item in items:
        count = 0 if item.get("kind") == "compaction" else count + 1
    return count


def compaction_items(
    session: LiveSession, trigger: str, turn_id: str | None, count: int
) -> tuple[CompactionItem, CompactionItem]:
    """A compaction's item in progress and completed (see the module contract)."""
    before = max(1, count) * _TOKENS_PER_ITEM
    base: dict[str, Any] = {
        "itemId": new_uuid7(),
        "kind": "compaction",
        "turnId": turn_id,
        "trigger": trigger,
    }
    started = {**base, "revision": 1, "status": "inProgress", "recordedAt": rfc3339_now()}
    completed = {
        **base,
        "revision": 2,
        "status": "completed",
        "recordedAt": rfc3339_now(),
        "outcome": "compacted",
        "strategyId": STRATEGY,
        "summarizedThrough": f"session:{session.session_id}:seq:{session.fold.head}",
        "tokensBefore": before,
        "tokensAfter": max(1, before // 5),
    }
    return CompactionItem.model_validate(started), CompactionItem.model_validate(completed)


async def auto_compact(turn: Turn) -> None:
    """``sim:autocompact`` (see the module contract)."""
    count = compactable(list(turn.session.fold.items.values()))
    started, completed = compaction_items(turn.session, "auto", turn.turn_id, count)
    await turn.item_event("item/started", started)
    await turn.item_event("item/completed", completed)
