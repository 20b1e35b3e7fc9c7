"""Goal turns: the turns a host starts by itself to work on the session goal.

Contract: ``goal_turn`` is the ``TurnRequest`` of a turn a goal command woke (``goal/set``,
``goal/resume``, ``goal/edit`` of an active goal on an idle session): its command id is the goal
command's, it has no user message, and it plays the objective as a prompt (so an objective's
``sim:`` lines script the turn, ``sim:hold`` keeping it running until it is stopped). A
``sim:goal-again`` line of the objective (at most ``MAX_GOAL_TURNS``) ends the part that turn
plays: once it completed, the goal still active and no turn queued, Muse takes the next turn by
itself (``goal_again``: a command id no client sent, no user message) and plays the next part.
``pause_stopped_goal``: a stopped turn (``turn/cancel``, ``turn/interrupt``) pauses an active
goal (``session/goalChanged`` before its ``turn/completed``), so Muse does not wake it at once.
``sim:goal-on-resume`` ends what goal commands' turns play: Muse plays the rest by itself as a
new process resumes the session, goal active (``resumed_goal_turn``), after the answer;
``sim:goal-on-prompt`` likewise as a ``turn/start`` reaches the idle session, each time
(``prompted_goal_turn``): that turn first, the prompt's queued behind it."""

from __future__ import annotations

import re
from typing import Final

from muse_acp.sim.script.directives import parse_prompt
from muse_acp.sim.script.turn_requests import TurnRequest
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.session import LiveSession, Position
from muse_acp_wire.msp import Goal, SessionGoalChangedParams

__all__ = [
    "MAX_GOAL_TURNS",
    "goal_again",
    "goal_changed",
    "goal_turn",
    "pause_stopped_goal",
    "prompted_goal_turn",
    "resumed_goal_turn",
]

MAX_GOAL_TURNS: Final = 16
"""Turns Muse takes by itself after a woken one, at most (further markers stay text)."""
_AGAIN: Final = re.compile(r"^[ \t]*sim:goal-again[ \t]*$\n?", re.MULTILINE)
_ON_RESUME: Final = re.compile(r"^[ \t]*sim:goal-on-resume[ \t]*$\n?", re.MULTILINE)
_ON_PROMPT: Final = re.compile(r"^[ \t]*sim:goal-on-prompt[ \t]*$\n?", re.MULTILINE)


def goal_turn(objective: str, command_id: str) -> TurnRequest:
    """The turn a goal command with ``command_id`` woke to work on ``objective``."""
    woken = re.split(_ON_PROMPT, re.split(_ON_RESUME, objective, maxsplit=1)[0], maxsplit=1)[0]
    first, *rest = re.split(_AGAIN, woken, maxsplit=MAX_GOAL_TURNS)
    return _turn(first, command_id, tuple(rest))


def resumed_goal_turn(session: LiveSession) -> TurnRequest | None:
    """The turn Muse starts by itself as a new process resumes ``session`` (see the module
    contract): None unless the goal is active, its objective says so and no turn runs."""
    return _woken_goal_turn(session, _ON_RESUME)


def prompted_goal_turn(session: LiveSession) -> TurnRequest | None:
    """The turn Muse starts by itself as a ``turn/start`` reaches idle ``session`` (see the
    module contract): None unless the goal is active, its objective says so and no turn runs."""
    return _woken_goal_turn(session, _ON_PROMPT)


def _woken_goal_turn(session: LiveSession, wakes: re.Pattern[str]) -> TurnRequest | None:
    """The turn an active goal's objective asks for after ``wakes`` (its marker line), when no
    turn runs or waits."""
    goal = session.fold.goal
    if goal is None or goal.get("status") != "active" or session.runner is not None:
        return None
    woken = re.split(wakes, str(goal.get("objective", "")), maxsplit=1)
    if len(woken) < 2 or session.queue:
        return None
    first, *rest = re.split(_AGAIN, woken[1], maxsplit=MAX_GOAL_TURNS)
    return _turn(first, new_uuid7(), tuple(rest))


def goal_again(session: LiveSession, completed: TurnRequest | None) -> TurnRequest | None:
    """The turn Muse takes by itself after the ``completed`` one (see the module contract)."""
    goal = session.fold.goal
    if completed is None or not completed.then or session.queue:
        return None
    if goal is None or goal.get("status") != "active":
        return None
    return _turn(completed.then[0], new_uuid7(), completed.then[1:])


def _turn(part: str, command_id: str, then: tuple[str, ...]) -> TurnRequest:
    return TurnRequest(
        turn_id=new_uuid7(),
        command_id=command_id,
        text=part,
        prompt=parse_prompt(part),
        goal=True,
        then=then,
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
