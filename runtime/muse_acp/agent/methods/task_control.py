"""``_muse/task``: stop a workflow or background task Muse runs for a session.

Contract: the client opts in with ``clientCapabilities._meta["muse/asyncTasks"]`` and the agent
advertises ``_meta["muse/asyncTasks"] = {version: 1, method: "_muse/task", actions: ["cancel"]}``
when the installed Muse can do it (1.3.0 and newer, ``versions`` feature ``taskControl``).
``{sessionId, target, action: "cancel"}`` names the card (``toolCallId``) of a running workflow
or background task; it is checked in this order: negotiated (-32600), the session is open
(-32002), a Muse host runs for it (-32600: background work ends with its host, so there is
nothing left to stop), that host can stop work (-32600 naming its version and the first that
can), and the card shows a workflow or background task still running (-32602). Then
``workflow/cancel`` (a workflow) or ``task/stop`` (a background task) is sent within the submit
budget (``background_tasks.stop_work``, which ``/tasks stop`` uses too), and the answer
``{status, target, kind}`` says whether Muse took it (``accepted``) or the work had already
ended (``noop``). The card itself reports the outcome as Muse sends it.
It does not occupy the session: stopping background work while a prompt runs is the point.
"""

from __future__ import annotations

from muse_acp.agent.commands.background_tasks import FIRST_TASK_HOST, stop_work
from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors import failures
from muse_acp.rpc import INVALID_PARAMS, INVALID_REQUEST, RequestContext, RpcError
from muse_acp.text import quoted
from muse_acp_wire import acp

__all__ = ["FIRST_TASK_HOST", "handle_task"]


def _unavailable(version: str) -> RpcError:
    """The installed Muse cannot stop background work (``version`` as it reports it)."""
    failure = failures.Failure(
        "taskControlUnsupported", "host", retryable=False, phase="cancelling"
    )
    return failure.error(
        f"this Muse ({version}) cannot stop a workflow or background task from a client; Muse "
        f"{FIRST_TASK_HOST} and newer can. Let the work finish, or update Muse.",
        INVALID_REQUEST,
    )


async def handle_task(
    ctx: AgentContext, params: acp.MuseTaskRequest, rctx: RequestContext
) -> acp.MuseTaskResponse:
    if not ctx.negotiated.tasks:
        if ctx.negotiated.tasks_asked:  # asked for, but the installed Muse cannot do it
            probed = ctx.hosting.probed
            raise _unavailable(probed.version if probed and probed.version else "unknown")
        raise RpcError(
            INVALID_REQUEST,
            "_muse/task was not negotiated on this connection; opt in with "
            'clientCapabilities._meta["muse/asyncTasks"] = 1 at initialize (Muse '
            f"{FIRST_TASK_HOST} or newer)",
        )
    session = ctx.sessions.require(params.session_id)
    host = session.execution.host
    if host is None or host.dead.is_set():
        raise RpcError(
            INVALID_REQUEST,
            f"no Muse host runs for session {session.session_id}, and background work ends "
            "with its host, so there is nothing to stop",
        )
    if not host.features.has("taskControl"):
        raise _unavailable(host.version)
    target = session.running.find(params.target)
    if target is None:
        raise RpcError(
            INVALID_PARAMS,
            f"{quoted(params.target, 100)} is not the card of a running workflow or background "
            f"task in session {session.session_id}; name a card whose work is still running",
            {"target": params.target[:100]},
        )
    # Muse stops the work once asked: the asking is the request's commit.
    async with rctx.commit():
        status = await stop_work(ctx, session, host, target)
    return acp.MuseTaskResponse(status=status, target=params.target, kind=target.kind)
