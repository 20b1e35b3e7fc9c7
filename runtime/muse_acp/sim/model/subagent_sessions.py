"""A subagent's own session, and the shell command a subagent runs in it
(``sim:subagent-approve COMMAND``).

Contract: ``open_child`` stores a new session for one subagent (the ``childSessionId`` of its
item) no connection is subscribed to: ``view/page`` and ``session/read`` return its durable view
events, sent to no client. From 1.4.4 ``session/list`` lists it with ``kind`` ``subagent`` and
its ``parentSessionId`` as Muse does, and ``announce_child`` streams that row; older hosts declare
no such member and muse-sim leaves it out. ``run_command`` plays the subagent's work there, in a
turn of its own: a reasoning summary, an agent message, its ``bash`` call (asked on the PARENT
session's approval plane, answered with the parent's ``approval/decide``, ``subagentOrigin``
naming the child; then completed, rejected or failed as the parent's approved commands are),
then its final agent message, the report it hands back as its result. A host without
``subagent_origin`` (before 1.3.0) declares no way to say whose approval it asks: there the
command runs unasked.
"""

from __future__ import annotations

from typing import Final

from muse_acp.sim.model.approval_events import request_approval
from muse_acp.sim.model.asks import ApprovalAsk, split_stages
from muse_acp.sim.model.tools import ToolCall, shell_args
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.script.directives import Prompt
from muse_acp.sim.script.turn_requests import TurnRequest
from muse_acp.sim.state.ids import new_uuid7, rfc3339_now
from muse_acp.sim.state.session import LiveSession
from muse_acp.sim.state.store import SessionMeta
from muse_acp.sim.state.wire import Outbox
from muse_acp_wire.msp import ApprovalSubagentOrigin

__all__ = ["announce_child", "open_child", "run_command"]

DENIED: Final = "the approval policy (denyUnmatched) refused this command"
ABORTED: Final = "tool approval cancelled"


class _Unsubscribed(Outbox):
    """The outbox of a session no connection is subscribed to: nothing is sent."""

    async def pace(self) -> None:
        return

    async def send_event(self, method: str, params: bytes) -> None:
        return


def open_child(turn: Turn) -> LiveSession:
    """A new stored session of a subagent of ``turn``'s session (see the module contract)."""
    parent, now = turn.session.meta, rfc3339_now()
    meta = SessionMeta(
        session_id=new_uuid7(),
        created_at=now,
        updated_at=now,
        workspace_root=parent.workspace_root,
        provider_id=parent.provider_id,
        model_id=parent.model_id,
        approval_mode=parent.approval_mode,
        parent_session_id=parent.session_id,
    )
    return turn.ctx.adopt(meta, _Unsubscribed(turn.session.outbox.writer))


async def announce_child(turn: Turn, child: LiveSession) -> None:
    """Tell a connection that streams the session list of ``child``'s row, where the host lists
    subagents' sessions (see the module contract)."""
    if turn.ctx.profile.session_kinds:
        await turn.ctx.list_changed(child.meta)


async def run_command(turn: Turn, child: LiveSession, subagent_id: str, command: str) -> str:
    """Run ``command`` as subagent ``subagent_id`` of ``turn`` in its session ``child``; its
    report, ``COMMAND: DECISION`` (the decision ``approved`` when it was not asked)."""
    ctx = turn.ctx
    request = TurnRequest(new_uuid7(), new_uuid7(), command, Prompt(command, ()))
    own = Turn(ctx, child, request)
    approval_id = new_uuid7()
    args = shell_args(command, "Run a command the parent session delegated")
    call = ToolCall(own, "bash", args, approval_id=approval_id)
    await own.reasoning(f"The parent session wants {command} run.")
    await own.say(f"Running {command}.")
    await call.start()
    decision = "approved"
    if ctx.profile.facts.subagent_origin:
        ask = ApprovalAsk(
            session_id=turn.session_id,
            turn_id=own.turn_id,
            item_id=call.item_id,
            tool_call_id=call.call_id,
            raw_args=args,
            command=command,
            workspace_root=child.meta.workspace_root,
            stages=split_stages(command, 1),
            reasons=ctx.profile.change_reasons,
            approval_id=approval_id,
            origin=ApprovalSubagentOrigin(
                child_session_id=child.session_id,
                child_run_id=new_uuid7(),
                subagent_id=subagent_id,
            ),
        )
        decision = await request_approval(turn, ask)
    if decision in ("approved", "approvedForSession"):
        await call.update()
        await call.stream([f"simulated run of: {command}\n".encode()])
        await call.finish()
    else:
        await call.finish_with(
            "rejected" if decision == "denied" else "failed",
            DENIED if decision == "denied" else ABORTED,
        )
    report = f"{command}: {decision}"
    await own.say(report)
    return report
