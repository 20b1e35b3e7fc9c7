"""``/workflow``: the children of the session's running workflows, and retrying or skipping one.

Contract: ``run_workflow`` answers with one agent message and never starts a turn or a host.
``/workflow`` lists each child of a workflow Muse runs for the session (as its card last showed
it: label, child id, status, attempt, failure). ``/workflow retry CHILD`` retries a failed child
and ``/workflow skip CHILD`` skips one that has not ended, CHILD being its label or child id
(any case): ``workflow/childControl`` with the child's current attempt, on the host that runs
the workflow, where Muse has it (``features``: ``workflowChildren``, 1.3.0 on); the card and
the child session then show the outcome as Muse reports it. ``/workflow pause`` and ``/workflow
resume`` pause or resume every workflow Muse runs for the session (``workflow/pause``, feature
``workflowPause``; ``workflow/resume``, ``workflowResume``), one reply line each. Errors: an
unknown or ambiguous child, a retry of a child that did not fail, a Muse too old (nothing sent),
no workflow running, or Muse's refusal (a stale attempt) are told in the reply.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from muse_acp.agent.cards.child_sessions import ChildView
from muse_acp.agent.context import AgentContext
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.sessions.host_work import WorkTarget
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.turns.work import SessionWork
from muse_acp.host.client import MspHost
from muse_acp.host.features import first_declaring
from muse_acp.host.versions import Feature
from muse_acp.ids import new_uuid7
from muse_acp.redact import redact
from muse_acp.rpc import RpcError
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = ["WORKFLOW_HINT", "run_workflow"]

WORKFLOW_HINT: Final = (
    "retry CHILD | skip CHILD | pause | resume (nothing: list the workflows' children)"
)
_USAGE: Final = (
    "Use /workflow to list the children of the workflows Muse runs for this session, "
    "/workflow retry CHILD to retry a failed child or /workflow skip CHILD to skip one, CHILD "
    "being its label or id, and /workflow pause or /workflow resume for the whole workflows. "
    "Nothing was changed."
)
_PAUSING: Final[Mapping[str, Feature]] = MappingProxyType(
    {"pause": "workflowPause", "resume": "workflowResume"}
)
_SHOWN: Final = 40


async def run_workflow(
    ctx: AgentContext, session: AcpSession, work: SessionWork, argument: str | None
) -> acp.StopReason:
    """Run ``/workflow`` with its ``argument`` (see the module contract)."""
    verb, _, name = (argument or "").strip().partition(" ")
    verb, name = verb.lower(), name.strip()
    if verb in _PAUSING and not name:
        await session.say(await _pause_or_resume(ctx, session, work, verb))
        return "end_turn"
    children = session.running.workflow_children()
    if not verb:
        await session.say(_listing(children))
        return "end_turn"
    if verb not in ("retry", "skip") or not name:
        await session.say(_USAGE)
        return "end_turn"
    await session.say(await _control(ctx, session, work, verb, name, children))
    return "end_turn"


async def _control(
    ctx: AgentContext,
    session: AcpSession,
    work: SessionWork,
    verb: str,
    name: str,
    children: list[ChildView],
) -> str:
    host = session.execution.host
    if host is None or host.dead.is_set():
        return "No Muse host runs a workflow for this session now, so nothing was changed."
    if not host.features.has("workflowChildren"):
        oldest = first_declaring("workflowChildren")
        return (
            f"Retrying or skipping one child needs Muse {oldest} or newer, and this Muse is "
            f"{clip(host.version, 40)}, so nothing was changed."
        )
    wanted = name.casefold()
    found = [c for c in children if wanted in (c.ref.key.casefold(), c.title.casefold())]
    shown = clip(name, 100)
    if not found:
        return f"No child of a running workflow is called {shown!r}. {_listing(children)}"
    if len(found) > 1:
        return f"{shown!r} names {len(found)} children; name one by its id. {_listing(found)}"
    [child] = found
    if verb == "retry" and child.status != "failed":
        return f"Only a failed child can be retried, and {child.title!r} is {child.status}."
    if verb == "skip" and not child.running:
        return f"{child.title!r} has ended ({child.status}), so there is nothing to skip."
    if child.ref.run_id is None:  # every workflow child has one; a subagent is no child here
        return f"{child.title!r} is not a workflow child, so nothing was changed."
    params = msp.WorkflowChildControlParams(
        command_id=new_uuid7(),
        session_id=session.session_id,
        workflow_run_id=child.ref.run_id,
        child_id=child.ref.key,
        attempt=child.attempt,
        action="retry" if verb == "retry" else "skip",
    )
    async with work.commit(), session.execution.holding(host):  # Muse acts once asked
        try:
            ack = await ask(
                host,
                "workflow/childControl",
                params,
                msp.CommandAck,
                phase="submitting",
                budget=ctx.config.deadlines.submit,
            )
        except RpcError as error:
            detail = redact(" ".join(error.message.split()), environ=ctx.environ, limit=500)
            return f"/workflow {verb} failed and {child.title!r} may be unchanged: {detail}"
    if ack.status == "noop":
        return f"Muse had nothing to {verb}: {child.title!r} changed meanwhile. Nothing was done."
    done = "is being retried" if verb == "retry" else "was skipped"
    return f"{child.title!r} {done} (attempt {child.attempt}); its card shows how it goes."


async def _pause_or_resume(
    ctx: AgentContext, session: AcpSession, work: SessionWork, verb: str
) -> str:
    host = session.execution.host
    if host is None or host.dead.is_set():
        return "No Muse host runs a workflow for this session now, so nothing was changed."
    feature = _PAUSING[verb]
    if not host.features.has(feature):
        oldest = first_declaring(feature)
        return (
            f"Muse can {verb} a workflow from {oldest} on, and this Muse is "
            f"{clip(host.version, 40)}, so nothing was changed; stop the whole workflow from "
            "its card, or skip its children one by one."
        )
    runs = [target for _, target in session.running.listed() if target.kind == "workflow"]
    if not runs:
        return f"No workflow Muse runs for this session is in progress, so there is none to {verb}."
    lines = []
    async with work.commit(), session.execution.holding(host):  # Muse acts once asked
        for run in runs:
            lines.append(await _ask_pause(ctx, session, host, verb, run))
    return "\n".join(lines)


async def _ask_pause(
    ctx: AgentContext, session: AcpSession, host: MspHost, verb: str, run: WorkTarget
) -> str:
    title = clip(run.title or run.host_id, 100)
    ids = {"command_id": new_uuid7(), "session_id": session.session_id}
    budget = ctx.config.deadlines.submit
    try:
        if verb == "pause":
            pause = msp.WorkflowPauseParams(**ids, workflow_run_id=run.host_id)
            await ask(
                host,
                "workflow/pause",
                pause,
                msp.WorkflowControlResult,
                phase="submitting",
                budget=budget,
            )
            if host.features.has("workflowResume"):
                return f"Muse is pausing {title!r}; /workflow resume resumes it."
            return (
                f"Muse is pausing {title!r}; this Muse cannot resume a workflow (Muse "
                f"{first_declaring('workflowResume')} and newer can): stop it from its card."
            )
        resume = msp.WorkflowResumeParams(**ids, workflow_run_id=run.host_id)
        await ask(
            host,
            "workflow/resume",
            resume,
            msp.WorkflowResumeResult,
            phase="submitting",
            budget=budget,
        )
    except RpcError as error:
        detail = redact(" ".join(error.message.split()), environ=ctx.environ, limit=500)
        return f"/workflow {verb} failed and {title!r} may be unchanged: {detail}"
    return f"Muse is resuming {title!r}; its card shows how it goes."


def _listing(children: list[ChildView]) -> str:
    if not children:
        return "No workflow Muse runs for this session has children right now."
    lines = ["Children of the running workflows:"]
    for child in children[:_SHOWN]:
        line = f"- {child.title} ({child.ref.key}): {child.status}"
        if child.attempt > 1:
            line += f", attempt {child.attempt}"
        if child.failure:
            line += f", {child.failure}"
        lines.append(line)
    if len(children) > _SHOWN:
        lines.append(f"…and {len(children) - _SHOWN} more.")
    return "\n".join(lines)
