"""Work that outlives its turn: a workflow (``sim:workflow TEXT``) and a background tool task
(``sim:background COMMAND``), and the commands that stop them.

Contract: ``start_workflow`` and ``start_background`` emit the work's item in progress and
register it in the session's ``background`` table instead of closing it with the turn.
``after_turn`` runs once ``turn/completed`` was sent: ``PROGRESS_AFTER`` seconds later each piece
of that turn's work reports progress, then, on versions that cannot stop it, completes on its
own; elsewhere it runs until stopped. ``workflow/cancel`` and ``task/stop`` (1.3.0 and newer)
complete running work ``cancelled`` after the acknowledgement, answer ``noop`` for ended work and
-32602 for an unknown id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio

from muse_acp.rpc import RequestContext, RequestRoute
from muse_acp.sim.model.tools import ToolCall, shell_args
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.state import errors
from muse_acp.sim.state.context import HostContext
from muse_acp.sim.state.ids import new_uuid7, rfc3339_now
from muse_acp.sim.state.session import Background
from muse_acp_wire.msp import (
    CommandAck,
    TaskCommandResult,
    TaskStopParams,
    WorkflowCancelParams,
    WorkflowChild,
    WorkflowItem,
)

__all__ = [
    "PROGRESS_AFTER",
    "BackgroundControls",
    "BackgroundWork",
    "after_turn",
    "start_background",
    "start_workflow",
]


PROGRESS_AFTER: Final = 0.5
"""Seconds after its turn ended that background work reports progress."""


@dataclass(slots=True)
class BackgroundWork:
    """One piece of work that outlives its turn, as the session keeps it."""

    turn: Turn
    progress: Callable[[], Awaitable[None]]
    finish: Callable[[str], Awaitable[None]]
    """Complete it with the given terminal status."""
    ended: bool = False


async def start_workflow(turn: Turn, text: str) -> None:
    run_id = new_uuid7()
    item_id = new_uuid7()
    revision = 0
    stoppable = turn.ctx.profile.serves("workflow/cancel")

    def item(status: str, phase: str) -> WorkflowItem:
        nonlocal revision
        revision += 1
        child_status = "running" if status == "inProgress" else status
        return WorkflowItem(
            item_id=item_id,
            kind="workflow",
            turn_id=turn.turn_id,
            revision=revision,
            status=status,
            recorded_at=rfc3339_now(),
            workflow_run_id=run_id,
            trigger_source="explicitUserAsk",
            stop_available=stoppable and status == "inProgress",
            children=[
                WorkflowChild(
                    child_id="child-1", attempt=1, status=child_status, phase=phase, label=text
                )
            ],
            message=text,
        )

    async def progress() -> None:
        await turn.item_event("item/updated", item("inProgress", "working"))

    async def finish(status: str) -> None:
        await turn.item_event("item/completed", item(status, "done"))

    await turn.item_event("item/started", item("inProgress", "starting"))
    turn.session.background[run_id] = BackgroundWork(turn, progress, finish)


async def start_background(turn: Turn, command: str) -> None:
    call = ToolCall(turn, "bash", shell_args(command, "Run a long command in the background"))
    await call.start()
    del turn.open_items[call.item_id]  # it goes on after the turn, so the turn does not close it
    if turn.ctx.profile.serves("task/stop"):
        await turn.item_event(
            "item/updated", call.item("inProgress", background=True, background_initiator="model")
        )

    async def progress() -> None:
        await turn.item_event("item/updated", call.item("inProgress", background=True))

    async def finish(status: str) -> None:
        await turn.item_event("item/completed", call.item(status))

    turn.session.background[call.item_id] = BackgroundWork(turn, progress, finish)


async def after_turn(turn: Turn) -> None:
    """Background work of ``turn`` reports progress (see the module contract)."""
    works = [w for w in turn.session.background.values() if w.turn is turn and not w.ended]
    if works:
        turn.ctx.spawn(_progress, turn, works)


async def _progress(turn: Turn, works: list[Background]) -> None:
    # Work that runs on reports a while after the turn, as a real workflow's children do.
    await anyio.sleep(PROGRESS_AFTER)
    stoppable = turn.ctx.profile.serves("workflow/cancel")
    for work in works:
        if not work.ended:
            await work.progress()
            if not stoppable:
                work.ended = True
                await work.finish("completed")


class BackgroundControls:
    """``workflow/cancel`` and ``task/stop`` (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [
            RequestRoute("workflow/cancel", WorkflowCancelParams, self.cancel_workflow),
            RequestRoute("task/stop", TaskStopParams, self.stop_task),
        ]

    async def _stop(
        self, session_id: str, work_id: str, method: str, request: RequestContext
    ) -> Literal["accepted", "noop"]:
        session = self.ctx.live(session_id)
        work = session.background.get(work_id)
        if work is None:
            raise errors.invalid_params(f"invalid {method}: no background work {work_id}")
        if work.ended:
            return "noop"
        work.ended = True
        answered = self.ctx.answered(request)

        async def cancelled() -> None:
            await answered.wait()
            await work.finish("cancelled")

        self.ctx.spawn(cancelled)
        return "accepted"

    async def cancel_workflow(
        self, params: WorkflowCancelParams, request: RequestContext
    ) -> CommandAck:
        status = await self._stop(
            params.session_id, params.workflow_run_id, "workflow/cancel", request
        )
        return CommandAck(command_id=params.command_id, status=status)

    async def stop_task(self, params: TaskStopParams, request: RequestContext) -> TaskCommandResult:
        status = await self._stop(params.session_id, params.task_id, "task/stop", request)
        return TaskCommandResult(
            command_id=params.command_id, status=status, task_id=params.task_id
        )
