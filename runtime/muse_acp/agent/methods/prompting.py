"""``session/prompt`` and ``session/cancel``: where a user's prompt becomes a Muse turn.

Contract: nothing reaches Muse until every check passed, in this order: a requested file-change
report is well-formed (-32602, ``file_change_report``), the session is open (-32002) and free
for a prompt, and the content acceptable (-32602, ``prompt_content``). A prompt sent while
another prompt runs or is being cancelled waits in the session's queue (``prompt_queue``; -32600
once full); behind other work (a settings change, a kept turn asking the user) it is refused
(-32600) unless that work is about to end. A local command (``commands``) runs without a model
turn; anything else runs a turn until it settles (``turn``; one the session can run at once may
have been started as it was read, ``early_prompt``), or one ``muse exec`` run on the legacy
backend (``exec_turn``). Cancellation is ordered by arrival: ``session/cancel`` stops the
running work and every prompt that arrived before it, queued ones answered ``cancelled`` at
once; ``$/cancel_request`` answers REQUEST_CANCELLED once the turn settled, at once for a queued
prompt, which leaves the queue alone. A requested file-change report goes before the answer.
"""

from __future__ import annotations

import logging
from typing import Final

from muse_acp.agent.commands import commands
from muse_acp.agent.commands.plan_mode import planning_input
from muse_acp.agent.context import AgentContext
from muse_acp.agent.handshake import file_change_report
from muse_acp.agent.prompts import early_prompt
from muse_acp.agent.prompts.early_prompt import Withdrawal
from muse_acp.agent.prompts.exec_turn import run_exec_turn
from muse_acp.agent.prompts.model_turn import run_submitted, run_turn
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.prompt_content import convert_prompt
from muse_acp.agent.turns.work import SessionWork
from muse_acp.rpc import RequestContext, RpcError
from muse_acp_wire import acp

__all__ = ["handle_cancel", "handle_prompt", "run_turn"]

logger: Final = logging.getLogger("muse_acp.agent")


async def handle_prompt(
    ctx: AgentContext, params: acp.PromptRequest, rctx: RequestContext
) -> acp.PromptResponse:
    report_id = file_change_report.requested(ctx.negotiated.file_change_report, params.field_meta)
    early = early_prompt.take(ctx, params.session_id, rctx)  # its turn started as it was read
    if early is not None:
        session, work, withdrawal = early.session, early.work, early.withdrawal
    else:
        session = ctx.sessions.require(params.session_id)
        work = await session.admit_prompt(rctx.arrival)  # the session's now, or queued
        work.commit = rctx.commit  # a local command's change, made whole or not at all
        withdrawal = Withdrawal(work)
        rctx.on_cancel(withdrawal)  # before any wait: a queued prompt withdrawn leaves the queue
    edited: set[str] = set()
    try:
        if early is not None:
            stop = await run_submitted(
                ctx, session, work, early.host, early.submission, early.roots, edited
            )
        else:
            stop = await _run(ctx, session, work, params, edited)
    except Exception:
        cancelled = withdrawal.withdrawn or work.cancel_requested
        await _report(session, report_id, edited, cancelled=cancelled)
        raise
    else:
        cancelled = withdrawal.withdrawn or work.cancel_requested or stop == "cancelled"
        await _report(session, report_id, edited, cancelled=cancelled)
    finally:
        session.end(work)
    if withdrawal.withdrawn:
        raise RpcError.request_cancelled()
    return acp.PromptResponse(stop_reason=stop)


async def _run(
    ctx: AgentContext,
    session: AcpSession,
    work: SessionWork,
    params: acp.PromptRequest,
    edited: set[str],
) -> acp.StopReason:
    """The prompt's work once it has the session: a command, an exec run or a model turn."""
    parts = convert_prompt(params.prompt)
    command = commands.recognise(params.prompt)
    if not await session.wait_turn(work):
        return "cancelled"  # cancelled while queued: it never ran
    if await ctx.on_exec():  # the legacy exec backend: a run per prompt, no commands
        return await run_exec_turn(ctx, session, work, parts)
    if command is not None:
        return await commands.run(ctx, session, work, command)
    parts = await planning_input(ctx, session, parts)  # plan mode leads with its plan
    return await run_turn(ctx, session, work, parts, edited)


async def _report(
    session: AcpSession, report_id: str | None, edited: set[str], *, cancelled: bool
) -> None:
    """Send the file-change report a prompt asked for (``report_id``), if it asked."""
    if report_id is not None:
        await session.outlet.send(file_change_report.report(report_id, edited, cancelled=cancelled))


async def handle_cancel(ctx: AgentContext, params: acp.CancelNotification) -> None:
    session = ctx.sessions.get(params.session_id)
    if session is None or session.closed:
        logger.debug("session/cancel for a session that is not open")
        return
    session.cancel(ctx.acp.arrivals)
