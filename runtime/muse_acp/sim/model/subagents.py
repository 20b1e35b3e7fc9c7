"""A native subagent Muse delegates to within a turn (``sim:subagent OBJECTIVE``,
``sim:subagent-fails OBJECTIVE``, ``sim:subagent-hold OBJECTIVE``,
``sim:subagent-approve COMMAND``), and ``subagent/stop``.

Contract: ``run_subagent`` emits the ``subagent`` item as Muse's official transcripts show one:
started ``accepted``, then running with its own ``childSessionId``, then completed with a result
summary, or, when it fails, ``failed`` with the result's ``errorKind`` ``provider_error``. A held
subagent keeps running (and its turn with it) until ``subagent/stop`` names it, served where the
version's bundle declares it (1.4.4 on): then it ends ``cancelled`` with the stop's reason as
its summary, and the turn goes on; stopping the turn ends it too. ``subagent/stop`` answers
``noop`` for a subagent not running (as Muse does for a command with nothing to do) and -32602
for a session this process does not hold.
"""

from __future__ import annotations

from typing import Any, Final

import anyio

from muse_acp.rpc import RequestContext, RequestRoute
from muse_acp.sim.model.subagent_sessions import announce_child, open_child, run_command
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.script.delegation import Subagent
from muse_acp.sim.state.context import HostContext
from muse_acp.sim.state.ids import new_uuid7, rfc3339_now
from muse_acp_wire.msp import (
    CommandAcceptedResult,
    SubagentItem,
    SubagentOwnerReasonParams,
    SubagentResult,
)

__all__ = ["SubagentControls", "run_subagent"]

_STOPPED: Final = "stopped by its owner"


async def run_subagent(turn: Turn, directive: Subagent) -> None:
    objective, fails, hold = directive.objective, directive.fails, directive.hold
    item_id, subagent_id, child_session = new_uuid7(), f"subagent-{new_uuid7()}", new_uuid7()
    child = None if directive.command is None else open_child(turn)
    if child is not None:
        child_session = child.session_id
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
    if child is not None and directive.command is not None:
        await announce_child(turn, child)
        report = await run_command(turn, child, subagent_id, directive.command)
        result = SubagentResult(summary=report)
        await turn.item_event("item/completed", item("completed", "closed", result))
        return
    if hold:
        stop = turn.session.subagents[subagent_id] = anyio.Event()
        try:
            await stop.wait()
        finally:
            del turn.session.subagents[subagent_id]
        result = SubagentResult(summary=f"{_STOPPED}: {objective}")
        await turn.item_event("item/completed", item("cancelled", "closed", result))
        return
    if fails:
        result = SubagentResult(
            summary=f"could not finish: {objective}", error_kind="provider_error"
        )
    else:
        result = SubagentResult(summary=f"done: {objective}")
    await turn.item_event(
        "item/completed", item("failed" if fails else "completed", "closed", result)
    )


class SubagentControls:
    """``subagent/stop`` (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [RequestRoute("subagent/stop", SubagentOwnerReasonParams, self.stop)]

    async def stop(
        self, params: SubagentOwnerReasonParams, request: RequestContext
    ) -> CommandAcceptedResult:
        session = self.ctx.live(params.session_id)
        held = session.subagents.get(params.subagent_id)
        if held is None or held.is_set():
            return CommandAcceptedResult(command_id=params.command_id, status="noop")
        answered = self.ctx.answered(request)

        async def apply() -> None:
            await answered.wait()
            held.set()

        self.ctx.spawn(apply)
        return CommandAcceptedResult(command_id=params.command_id, status="accepted")
