"""``goal/*``: a session goal, set, paused, resumed and cleared, as hosts from 1.3.0 serve it.

Contract: only on versions whose schema publishes ``goal/*`` (elsewhere -32601). Every command
acts on a session held by this process. ``goal/set`` and ``goal/edit`` make the goal active
(a blank objective is -32602); ``goal/pause``, ``goal/resume`` and ``goal/clear`` change its
status or clear it. A refusal is -32030 ``commandRejected`` with the reason real hosts give
(``missing_goal``, ``invalid_goal_state``). Each accepted command is acknowledged ``accepted``,
then one durable ``session/goalChanged`` carries the new goal. As real hosts do, ``goal/set``,
``goal/resume`` and ``goal/edit`` that leave the goal active wake a turn to work on it
(``goal_turns``): on an idle session a fresh one, started after the goal changed, whose id the
acknowledgement's ``turnId`` names; while a turn runs, that turn (``goal/edit`` steers it with the
new objective). A paused goal wakes nothing. Its progress stays as set.
"""

from __future__ import annotations

from typing import Any

import anyio

from muse_acp.rpc import RequestContext, RequestRoute
from muse_acp.sim.model.goal_turns import goal_changed, goal_turn
from muse_acp.sim.model.runner import TurnRunner
from muse_acp.sim.script.turn_requests import Steer
from muse_acp.sim.state import errors
from muse_acp.sim.state.context import ANSWER_WAIT, HostContext
from muse_acp.sim.state.session import LiveSession
from muse_acp_wire.msp import (
    Goal,
    GoalClearParams,
    GoalCommandResult,
    GoalEditParams,
    GoalPauseParams,
    GoalResumeParams,
    GoalSetParams,
)

__all__ = ["Goals"]


class Goals:
    """The ``goal/*`` routes (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [
            RequestRoute("goal/set", GoalSetParams, self.set),
            RequestRoute("goal/edit", GoalEditParams, self.edit),
            RequestRoute("goal/pause", GoalPauseParams, self.pause),
            RequestRoute("goal/resume", GoalResumeParams, self.resume),
            RequestRoute("goal/clear", GoalClearParams, self.clear),
        ]

    async def set(self, params: GoalSetParams, request: RequestContext) -> GoalCommandResult:
        session = self.ctx.live(params.session_id)
        objective = _objective("goal/set", params.objective)
        goal = Goal(objective=objective, status="active", percent_complete=0)
        return self._changed(session, request, params.command_id, goal, wake=True)

    async def edit(self, params: GoalEditParams, request: RequestContext) -> GoalCommandResult:
        session = self.ctx.live(params.session_id)
        objective = _objective("goal/edit", params.objective)
        current = _current(session, "goal/edit", params.command_id)
        goal = current.model_copy(update={"objective": objective})
        running = session.runner
        if running is not None and goal.status == "active" and not running.ending:
            running.steer(Steer(f"The goal is now: {objective}", params.command_id))
        return self._changed(session, request, params.command_id, goal, wake=True)

    async def pause(self, params: GoalPauseParams, request: RequestContext) -> GoalCommandResult:
        return self._move(params.session_id, params.command_id, "goal/pause", request)

    async def resume(self, params: GoalResumeParams, request: RequestContext) -> GoalCommandResult:
        return self._move(params.session_id, params.command_id, "goal/resume", request)

    async def clear(self, params: GoalClearParams, request: RequestContext) -> GoalCommandResult:
        session = self.ctx.live(params.session_id)
        _current(session, "goal/clear", params.command_id)
        return self._changed(session, request, params.command_id, None)

    def _move(
        self, session_id: str, command_id: str, method: str, request: RequestContext
    ) -> GoalCommandResult:
        session = self.ctx.live(session_id)
        current = _current(session, method, command_id)
        wanted, target = ("active", "paused") if method == "goal/pause" else ("paused", "active")
        if current.status != wanted:
            raise errors.command_rejected(method, command_id, "invalid_goal_state")
        goal = current.model_copy(update={"status": target})
        return self._changed(session, request, command_id, goal, wake=method == "goal/resume")

    def _changed(
        self,
        session: LiveSession,
        request: RequestContext,
        command_id: str,
        goal: Goal | None,
        *,
        wake: bool = False,
    ) -> GoalCommandResult:
        _, body = goal_changed(session, goal)
        if not wake or goal is None or goal.status != "active":
            self.ctx.send_after(request, "session/goalChanged", body)
            return GoalCommandResult(command_id=command_id, status="accepted")
        running = session.runner
        if running is not None:
            self.ctx.send_after(request, "session/goalChanged", body)
            return GoalCommandResult(
                command_id=command_id, status="accepted", turn_id=running.turn_id
            )
        runner = TurnRunner(self.ctx, session, goal_turn(goal.objective, command_id))
        session.runner = runner  # taken at once: a turn/start now queues behind it
        self.ctx.spawn(self._wake, session, self.ctx.answered(request), body, runner)
        return GoalCommandResult(command_id=command_id, status="accepted", turn_id=runner.turn_id)

    @staticmethod
    async def _wake(
        session: LiveSession, answered: anyio.Event, changed: bytes, runner: TurnRunner
    ) -> None:
        """After the acknowledgement, announce the goal, then run the turn it woke."""
        with anyio.move_on_after(ANSWER_WAIT):
            await answered.wait()
        await session.send_recorded([("session/goalChanged", changed)])
        await runner.launch()


def _objective(method: str, objective: str) -> str:
    if not objective.strip():
        raise errors.invalid_params(f"invalid {method} objective: expected non-blank text")
    return objective


def _current(session: LiveSession, method: str, command_id: str) -> Goal:
    goal = session.fold.goal
    if goal is None:
        raise errors.command_rejected(method, command_id, "missing_goal")
    return Goal.model_validate(goal)
