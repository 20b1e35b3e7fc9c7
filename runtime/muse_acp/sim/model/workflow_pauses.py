"""``workflow/pause`` and ``workflow/resume`` on a workflow with children
(``sim:workflow-children TEXT``), where the version's bundle declares them.

Contract: ``workflow/pause`` of a run still in progress marks it paused and is acknowledged
``accepted`` (again for a run already paused, as an admission-only command); the pause is not
on the wire (it folds as the workflow item's ``paused`` member, which the 1.4.2 surface these
versions are played on lacks). ``workflow/resume`` of a paused run un-pauses it and, as Muse
does, drives a turn: the running turn of the session when there is one, else a fresh turn Muse
starts by itself (no user message) playing ``Resume TEXT``; the answer names that turn. An
unknown or ended run, or the resume of a run not paused, is -32602.
"""

from __future__ import annotations

from typing import Any

import anyio

from muse_acp.rpc import RequestContext, RequestRoute
from muse_acp.sim.model.runner import TurnRunner
from muse_acp.sim.model.workflow_runs import WorkflowRun
from muse_acp.sim.script.directives import parse_prompt
from muse_acp.sim.script.turn_requests import TurnRequest
from muse_acp.sim.state import errors
from muse_acp.sim.state.context import ANSWER_WAIT, HostContext
from muse_acp.sim.state.ids import new_uuid7
from muse_acp_wire.msp import (
    WorkflowControlResult,
    WorkflowPauseParams,
    WorkflowResumeParams,
    WorkflowResumeResult,
)

__all__ = ["WorkflowPauses"]


class WorkflowPauses:
    """The ``workflow/pause`` and ``workflow/resume`` routes (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [
            RequestRoute("workflow/pause", WorkflowPauseParams, self.pause),
            RequestRoute("workflow/resume", WorkflowResumeParams, self.resume),
        ]

    def _run(self, method: str, session_id: str, run_id: str) -> WorkflowRun:
        run = self.ctx.live(session_id).background.get(run_id)
        if not isinstance(run, WorkflowRun) or run.ended:
            raise errors.invalid_params(f"invalid {method}: no live workflow run {run_id}")
        return run

    async def pause(self, params: WorkflowPauseParams, _: RequestContext) -> WorkflowControlResult:
        self._run("workflow/pause", params.session_id, params.workflow_run_id).paused = True
        return WorkflowControlResult(command_id=params.command_id, status="accepted")

    async def resume(
        self, params: WorkflowResumeParams, request: RequestContext
    ) -> WorkflowResumeResult:
        run = self._run("workflow/resume", params.session_id, params.workflow_run_id)
        if not run.paused:
            raise errors.invalid_params(f"invalid workflow/resume: run {run.run_id} is not paused")
        run.paused = False
        session = run.turn.session
        running = session.runner
        if running is not None:
            turn_id = running.turn_id
        else:
            text = f"Resume {run.text}"
            woken = TurnRequest(
                turn_id=new_uuid7(),
                command_id=params.command_id,
                text=text,
                prompt=parse_prompt(text),
                goal=True,  # Muse woke it: no user message
            )
            runner = TurnRunner(self.ctx, session, woken)
            session.runner = runner  # taken at once: a turn/start now queues behind it
            answered = self.ctx.answered(request)

            async def launch() -> None:
                with anyio.move_on_after(ANSWER_WAIT):
                    await answered.wait()
                await runner.launch()

            self.ctx.spawn(launch)
            turn_id = runner.turn_id
        return WorkflowResumeResult(
            command_id=params.command_id, status="accepted", turn_id=turn_id
        )
