"""``/tasks``: the workflows and background tasks Muse runs for a session, and stopping one.

Contract: ``run_tasks`` answers with one agent message and never starts a turn. ``/tasks``
lists the work still running that the session's cards show (``RunningWork``: a shell command
Muse sent to the background, a workflow), oldest first, numbered, each with its card's title
and ``toolCallId``; the host runs it, so the list is empty when no host runs. ``/tasks stop ID``
(ID: a number of that list or a card's ``toolCallId``) stops one through ``stop_work``, as
``_muse/task`` does: ``workflow/cancel`` for a workflow, ``task/stop`` for a task, on Muse
``FIRST_TASK_HOST`` and newer (``taskControl``); an older Muse gets nothing and the reply names
the version needed. The card itself reports the end as Muse sends it. Anything else lists the
forms. Background work keeps its host, and so its cards' updates, while it runs (``busy``).

Errors: a host that cannot be reached or refuses is told in the reply; nothing raises.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final, Literal

from muse_acp.agent.context import AgentContext
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.sessions.host_work import WorkTarget
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.turns.work import SessionWork
from muse_acp.host.client import MspHost
from muse_acp.ids import new_uuid7
from muse_acp.redact import redact
from muse_acp.rpc import RpcError
from muse_acp.text import clip, quoted
from muse_acp_wire import acp, msp

__all__ = ["FIRST_TASK_HOST", "TASKS_HINT", "run_tasks", "stop_work"]

FIRST_TASK_HOST: Final = "1.3.0"
"""The first Muse version that can stop workflows and background tasks."""
TASKS_HINT: Final = "stop ID (nothing: list the background work)"
_USAGE: Final = (
    "Use /tasks to list the background tasks and workflows Muse runs for this session, or "
    "/tasks stop ID to stop one (ID: its number in that list or its card's id)."
)
_KINDS: Final = MappingProxyType({"task": "background task", "workflow": "workflow"})


async def stop_work(
    ctx: AgentContext, session: AcpSession, host: MspHost, target: WorkTarget
) -> Literal["accepted", "noop"]:
    """Ask ``host`` to stop ``target`` within the submit budget: ``accepted``, or ``noop`` when
    the work had already ended. The caller has checked that ``host`` can (``taskControl``).

    Raises:
        RpcError: the host's failure, mapped as ``hosts.ask`` maps it.
    """
    budget = ctx.config.deadlines.submit
    async with session.execution.holding(host):
        if target.kind == "workflow":
            ack = await ask(
                host,
                "workflow/cancel",
                msp.WorkflowCancelParams(
                    command_id=new_uuid7(),
                    session_id=session.session_id,
                    workflow_run_id=target.host_id,
                ),
                msp.CommandAck,
                phase="cancelling",
                budget=budget,
            )
            return ack.status
        result = await ask(
            host,
            "task/stop",
            msp.TaskStopParams(
                command_id=new_uuid7(), session_id=session.session_id, task_id=target.host_id
            ),
            msp.TaskCommandResult,
            phase="cancelling",
            budget=budget,
        )
        return result.status


async def run_tasks(
    ctx: AgentContext, session: AcpSession, work: SessionWork, argument: str | None
) -> acp.StopReason:
    """Run ``/tasks`` with its ``argument`` (see the module contract)."""
    verb, _, rest = (argument or "").strip().partition(" ")
    wanted = rest.strip()
    host = session.execution.host
    if host is not None and host.dead.is_set():
        host = None
    if verb.lower() in ("", "list") and not wanted:
        await session.say(_listing(session, host))
    elif verb.lower() != "stop" or not wanted or " " in wanted:
        await session.say(_USAGE)
    else:
        await session.say(await _stop(ctx, session, host, wanted))
    return "end_turn"


def _listing(session: AcpSession, host: MspHost | None) -> str:
    running = session.running.listed() if host is not None else []
    if not running:
        return (
            "Muse runs no background task or workflow for this session now (background work "
            "ends with Muse's host, which runs while the session is used)."
        )
    lines = ["Background work Muse runs for this session:"]
    for number, (card, target) in enumerate(running, 1):
        lines.append(f"{number}. {clip(target.title, 200)} ({_KINDS[target.kind]}, card {card})")
    if host is not None and host.features.has("taskControl"):
        lines.append("Stop one with /tasks stop ID (its number or card id).")
    else:
        lines.append(_too_old(host.version if host else None, "Muse lets it finish"))
    return "\n".join(lines)


async def _stop(ctx: AgentContext, session: AcpSession, host: MspHost | None, wanted: str) -> str:
    # What the running host can do, else what the executable that would run could.
    features = host.features if host is not None else await ctx.startup.installed()
    if not features.has("taskControl"):
        return _too_old(features.version, "nothing was stopped")
    running = session.running.listed() if host is not None else []
    found = next((entry for entry in running if entry[0] == wanted), None)
    if found is None and wanted.isdigit() and 0 < int(wanted) <= len(running):
        found = running[int(wanted) - 1]
    if host is None or found is None:
        return (
            f"No background task or workflow {quoted(wanted, 100)} is running in this session, "
            "so nothing was stopped. Send /tasks to list what runs."
        )
    card, target = found
    title = clip(target.title, 200)
    try:
        status = await stop_work(ctx, session, host, target)
    except RpcError as error:
        detail = redact(" ".join(error.message.split()), environ=ctx.environ, limit=500)
        return f"Stopping {title} (card {card}) failed, and it may still run: {detail}"
    if status == "noop":
        return f"{title} (card {card}) had already ended; nothing was stopped."
    return f"Muse is stopping {title} (card {card}); its card shows the end."


def _too_old(version: str | None, outcome: str) -> str:
    found = f"this Muse is {clip(version, 40)}" if version else "this Muse's version is not known"
    return (
        f"Stopping background work needs Muse {FIRST_TASK_HOST} or newer, and {found}, so "
        f"{outcome}."
    )
