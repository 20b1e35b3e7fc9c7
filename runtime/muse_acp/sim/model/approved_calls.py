"""Tool calls behind an approval: an approved ``bash`` command (``sim:approve``), a protected
``write_file`` (``sim:protected``) and an ``edit_file`` (``sim:edit``).

Contract: each function starts the tool call, puts its ``ApprovalAsk`` to the client
(``muse_acp.sim.model.approval_events``) and ends the call by the decision: approved runs it
(nothing is run or written anywhere, the output says what would have been), ``denied`` by the
session's policy rejects it, anything else fails it as cancelled. With the shell or writes
disabled (``--disable-shell``, ``--disable-write``) the call is rejected unasked.
"""

from __future__ import annotations

from typing import Final

from muse_acp.sim.model.approval_events import request_approval
from muse_acp.sim.model.asks import CHOICES, ONCE_CHOICES, ApprovalAsk, split_stages
from muse_acp.sim.model.outputs import TEXT_MEDIA_TYPE
from muse_acp.sim.model.reviews import review_approval
from muse_acp.sim.model.tools import (
    SHELL_DISABLED,
    WRITE_DISABLED,
    ToolCall,
    compact_json,
    shell_args,
)
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.script.directives import Approve, Edit, ProtectedWrite
from muse_acp.sim.state.ids import new_uuid7

__all__ = [
    "APPROVAL_CANCELLED",
    "DENIED_BY_POLICY",
    "WRITTEN_CONTENT",
    "run_approved_command",
    "run_file_change",
]

DENIED_BY_POLICY: Final = "the approval policy (denyUnmatched) refused this command"
APPROVAL_CANCELLED: Final = "tool approval cancelled"
WRITTEN_CONTENT: Final = "written by muse-sim\n"
"""What a simulated ``write_file`` says it wrote (nothing is written anywhere)."""


async def run_approved_command(turn: Turn, directive: Approve) -> None:
    """A ``bash`` command behind a shell approval (``sim:approve``), run once approved."""
    approval_id = new_uuid7()
    args = shell_args(directive.command, "Run a command that needs approval")
    call = ToolCall(turn, "bash", args, approval_id=approval_id)
    await turn.usage(args, final=False)
    await call.start()
    if turn.ctx.options.disable_shell:
        await call.finish_with("rejected", SHELL_DISABLED)
        return
    ask = ApprovalAsk(
        session_id=turn.session_id,
        turn_id=turn.turn_id,
        item_id=call.item_id,
        tool_call_id=call.call_id,
        raw_args=args,
        command=directive.command,
        workspace_root=turn.session.meta.workspace_root,
        stages=split_stages(directive.command, directive.stages),
        race=directive.race and turn.ctx.profile.facts.stage_race,
        reasons=turn.ctx.profile.change_reasons,
        approval_id=approval_id,
    )
    if directive.review:
        await review_approval(turn, ask)
    decision = await request_approval(turn, ask)
    if decision in ("approved", "approvedForSession"):
        await call.update()
        call.store(TEXT_MEDIA_TYPE)
        await call.stream([f"simulated run of: {directive.command}\n".encode()])
        await call.finish()
    elif decision == "denied":
        await call.finish_with("rejected", DENIED_BY_POLICY)
    else:
        await call.finish_with("failed", APPROVAL_CANCELLED)


async def run_file_change(turn: Turn, directive: ProtectedWrite | Edit) -> None:
    """A ``write_file`` to a protected path or an ``edit_file``, behind a write approval."""
    if isinstance(directive, ProtectedWrite):
        tool = "write_file"
        args = compact_json({"content": WRITTEN_CONTENT, "path": directive.path})
    else:
        tool = "edit_file"
        args = compact_json(
            {"find": directive.find, "path": directive.path, "replace": directive.replace}
        )
    profile = turn.ctx.profile
    protected = isinstance(directive, ProtectedWrite) and profile.facts.protected_writes
    approval_id = new_uuid7()
    call = ToolCall(turn, tool, args, approval_id=approval_id)
    await turn.usage(args, final=False)
    await call.start()
    if turn.ctx.options.disable_write:
        await call.finish_with("rejected", WRITE_DISABLED)
        return
    ask = ApprovalAsk(
        session_id=turn.session_id,
        turn_id=turn.turn_id,
        item_id=call.item_id,
        tool_call_id=call.call_id,
        raw_args=args,
        workspace_root=turn.session.meta.workspace_root,
        stages=[],
        tool_name=tool,
        path=directive.path,
        protected=protected,
        bare=protected and isinstance(directive, ProtectedWrite) and directive.bare,
        reasons=profile.change_reasons,
        choices=ONCE_CHOICES if protected else CHOICES,
        approval_id=approval_id,
    )
    decision = await request_approval(turn, ask)
    if decision in ("approved", "approvedForSession") and isinstance(directive, Edit):
        await call.update()
        await call.finish_with("completed", f"-{directive.find}\n+{directive.replace}\n")
    elif decision in ("approved", "approvedForSession"):
        await call.update()
        size = len(WRITTEN_CONTENT.encode())
        await call.finish_with("completed", f"wrote {size} bytes to {directive.path}")
    elif decision == "denied":
        await call.finish_with("rejected", DENIED_BY_POLICY)
    else:
        await call.finish_with("failed", APPROVAL_CANCELLED)
