"""A workflow with several children, one of which fails (``sim:workflow-children TEXT``), and
``workflow/childControl``, which skips or retries one child.

Contract: ``start_children_workflow`` emits a workflow item with two children in progress and
registers the run in the session's ``background`` table. When its turn's work reports progress
(``workflows.after_turn``), ``TEXT (second)`` fails at its first attempt (``failureKind``
``tool_error``) while ``TEXT (first)`` keeps running. Where Muse cannot control children
(before 1.3.0) the run then ends on its own, ``failed`` (``after_turn`` finishes it).
Elsewhere it waits: ``workflow/childControl`` with the child's current attempt ``retry``s a
failed child (a new attempt that completes after the acknowledgement) or ``skip``s a child (it
ends ``cancelled``, as Muse reports a skipped child); a stale attempt is refused with reason
``stale_attempt``, an ended child's skip or a running child's retry is a ``noop``, an unknown
run or child -32602. The run completes once every child has ended; ``workflow/cancel`` still
stops it whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from muse_acp.rpc import RequestContext, RequestRoute
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.state import errors
from muse_acp.sim.state.context import HostContext
from muse_acp.sim.state.ids import new_uuid7, rfc3339_now
from muse_acp_wire.msp import CommandAck, WorkflowChild, WorkflowChildControlParams, WorkflowItem

__all__ = ["ChildControls", "WorkflowRun", "start_children_workflow"]

_CONTROL: Literal["workflow/childControl"] = "workflow/childControl"


@dataclass(slots=True)
class _Child:
    child_id: str
    label: str
    fails: bool = False
    attempt: int = 1
    status: str = "running"
    phase: str = "starting"
    failure_kind: str | None = None

    @property
    def ended(self) -> bool:
        return self.status != "running"

    def view(self) -> WorkflowChild:
        return WorkflowChild(
            child_id=self.child_id,
            attempt=self.attempt,
            status=self.status,
            phase=self.phase,
            label=self.label,
            terminal=None if self.status == "running" else self.status,
            failure_kind=self.failure_kind,
        )


class WorkflowRun:
    """One workflow run with its children (see the module contract)."""

    def __init__(self, turn: Turn, text: str) -> None:
        self.turn = turn
        self.text = text
        self.run_id = new_uuid7()
        self.item_id = new_uuid7()
        self.revision = 0
        self.children = [
            _Child("child-1", f"{text} (first)"),
            _Child("child-2", f"{text} (second)", fails=True),
        ]
        self.controllable = turn.ctx.profile.serves(_CONTROL)
        self.ended = False
        """Whether the run has ended (the session's ``background`` table reads it)."""
        self.paused = False
        """Whether ``workflow/pause`` paused it (``workflow_pauses``)."""

    def item(self, status: str) -> WorkflowItem:
        self.revision += 1
        return WorkflowItem(
            item_id=self.item_id,
            kind="workflow",
            turn_id=self.turn.turn_id,
            revision=self.revision,
            status=status,
            recorded_at=rfc3339_now(),
            workflow_run_id=self.run_id,
            trigger_source="explicitUserAsk",
            stop_available=self.controllable and status == "inProgress",
            children=[child.view() for child in self.children],
            message=self.text,
        )

    async def start(self) -> None:
        await self.turn.item_event("item/started", self.item("inProgress"))
        self.turn.session.background[self.run_id] = self

    async def progress(self) -> None:
        for child in self.children:
            child.phase = "working"
            if child.fails and child.attempt == 1 and not child.ended:
                child.status, child.failure_kind = "failed", "tool_error"
        await self.turn.item_event("item/updated", self.item("inProgress"))

    async def finish(self, status: str) -> None:
        """End the run ``status`` (``failed`` rather than ``completed`` with a failed child)."""
        for child in self.children:
            if not child.ended:
                child.status = status
        if status == "completed" and any(c.status == "failed" for c in self.children):
            status = "failed"
        await self.turn.item_event("item/completed", self.item(status))

    async def settle(self) -> None:
        """Report the children as they are; complete the run once every child has ended."""
        if self.ended:
            return
        if all(child.ended for child in self.children):
            self.ended = True
            await self.finish("completed")
        else:
            await self.turn.item_event("item/updated", self.item("inProgress"))


async def start_children_workflow(turn: Turn, text: str) -> None:
    await WorkflowRun(turn, text).start()


class ChildControls:
    """``workflow/childControl`` (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [RequestRoute(_CONTROL, WorkflowChildControlParams, self.child_control)]

    async def child_control(
        self, params: WorkflowChildControlParams, request: RequestContext
    ) -> CommandAck:
        session = self.ctx.live(params.session_id)
        run = session.background.get(params.workflow_run_id)
        if not isinstance(run, WorkflowRun):
            unknown = params.workflow_run_id
            raise errors.invalid_params(f"invalid {_CONTROL}: no workflow run {unknown}")
        child = next((c for c in run.children if c.child_id == params.child_id), None)
        if child is None:
            raise errors.invalid_params(f"invalid {_CONTROL}: no child {params.child_id}")
        if params.attempt != child.attempt:
            raise errors.command_rejected(_CONTROL, params.command_id, "stale_attempt")
        skip = params.action == "skip" and not child.ended
        retry = params.action == "retry" and child.status == "failed"
        if run.ended or not (skip or retry):
            return CommandAck(command_id=params.command_id, status="noop")
        answered = self.ctx.answered(request)

        async def apply() -> None:
            await answered.wait()
            if skip:
                child.status = "cancelled"
            else:
                child.attempt += 1
                child.status, child.failure_kind, child.phase = "running", None, "retrying"
                await run.settle()
                child.status, child.phase = "completed", "done"
            await run.settle()

        self.ctx.spawn(apply)
        return CommandAck(command_id=params.command_id, status="accepted")
