"""The session goal as the client sees it: announced in ``session_info_update`` and told in text.

Contract: ``goal_update`` turns the goal Muse announced (``session/goalChanged``; None once
cleared) into the ``session_info_update`` whose ``_meta["muse/goal"]`` is ``{goal}`` (see
``MuseGoalReport`` in the extension schema): objective, status, and progress and current or
next work when Muse reported them. ``announced_goal`` reads that block back from an update
(``GoalSeen``: whether the update carried one, and the goal), so the session can remember the
last goal it relayed. ``goal_text`` is how ``/goal`` shows a goal, one fact per line. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = ["GOAL_META", "GoalSeen", "announced_goal", "goal_text", "goal_update"]

GOAL_META = "muse/goal"
_SHOWN = 2000
"""Longest objective or work description shown, in characters."""


@dataclass(frozen=True, slots=True)
class GoalSeen:
    """A goal an update announced; ``goal`` is None when it was cleared."""

    goal: acp.MuseGoal | None


def goal_update(goal: msp.Goal | None) -> acp.SessionInfoUpdateSessionUpdate:
    """The ``session_info_update`` that announces ``goal`` (see the module contract)."""
    # A cleared goal is an explicit null; only a goal's own absent members are left out.
    dumped: dict[str, object] | None = None
    if goal is not None:
        shown = acp.MuseGoal(
            objective=goal.objective,
            status=goal.status,
            percent_complete=goal.percent_complete,
            current_work=goal.current_work,
            next_work=goal.next_work,
        )
        dumped = shown.model_dump(mode="json", by_alias=True, exclude_none=True)
    return acp.SessionInfoUpdateSessionUpdate(
        session_update="session_info_update", field_meta={GOAL_META: {"goal": dumped}}
    )


def announced_goal(update: acp.SessionUpdate) -> GoalSeen | None:
    """The goal ``update`` announces, or None when it announces none."""
    if not isinstance(update, acp.SessionInfoUpdateSessionUpdate) or not update.field_meta:
        return None
    block = update.field_meta.get(GOAL_META)
    if not isinstance(block, dict) or "goal" not in block:
        return None
    return GoalSeen(acp.MuseGoalReport.model_validate(block).goal)


def goal_text(goal: acp.MuseGoal | None) -> str:
    """How ``/goal`` shows ``goal`` (None: the session has none)."""
    if goal is None:
        return "This session has no goal."
    lines = [f"Goal: {clip(goal.objective, _SHOWN)}", f"Status: {goal.status}"]
    if goal.percent_complete is not None:
        lines.append(f"Progress: {goal.percent_complete}%")
    if goal.current_work:
        lines.append(f"Working on: {clip(goal.current_work, _SHOWN)}")
    if goal.next_work:
        lines.append(f"Next: {clip(goal.next_work, _SHOWN)}")
    return "\n".join(lines)
