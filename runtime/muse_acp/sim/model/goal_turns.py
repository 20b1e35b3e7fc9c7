"""Goal turns: the turns a host starts by itself to work on the session goal.

Contract: ``goal_turn`` is the ``TurnRequest`` of a turn a goal command woke (``goal/set``,
``goal/resume``, ``goal/edit`` of an active goal on an idle session): its command id is the goal
command's, it has no user message, and it plays the objective as a prompt (so an objective's
``sim:`` lines script the turn, ``sim:hold`` keeping it running until it is stopped).
``pause_stopped_goal`` is what a host does when such a turn is stopped (``turn/cancel`` or
``turn/interrupt``): an active goal is paused, through one durable ``session/goalChanged``,
before the turn's ``turn/completed``, so Muse does not wake it again at once.
"""

from __future__ import annotations

from muse_acp.sim.script.directives import parse_prompt
from muse_acp.sim.script.turn_requests import TurnRequest
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.session import LiveSession, Position
from muse_acp_wire.msp import Goal, SessionGoalChangedParams

__all__ = ["goal_changed", "goal_turn", "pause_stopped_goal"]


def goal_turn(objective: str, command_id: str) -> TurnRequest:
    """The turn a goal command with ``command_id`` woke to work on ``objective``."""
    return TurnRequest(
        turn_id=new_uuid7(),
        command_id=command_id,
        text=objective,
        prompt=parse_prompt(objective),
        goal=True,
    )


def goal_changed(session: LiveSession, goal: Goal | None) -> tuple[SessionGoalChangedParams, bytes]:
    """Record (not send) the ``session/goalChanged`` that announces ``goal``."""

    def build(pos: Position) -> SessionGoalChangedParams:
        return SessionGoalChangedParams(
            session_id=session.session_id,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            goal=goal,
        )

    return session.record("session/goalChanged", build)


async def pause_stopped_goal(session: LiveSession) -> None:
    """Pause the session's active goal after its turn was stopped (see the module contract)."""
    current = session.fold.goal
    if current is None or current.get("status") != "active":
        return
    goal = Goal.model_validate(current).model_copy(update={"status": "paused"})
    _, body = goal_changed(session, goal)
    await session.send_recorded([("session/goalChanged", body)])
