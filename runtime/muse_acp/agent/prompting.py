"""``session/prompt`` and ``session/cancel``: where a user's prompt becomes a Muse turn.

A prompt is checked in this order, and nothing reaches Muse until every check passed: the
session must be open (-32002), idle (-32600), and its content acceptable (-32602, see
``prompt_content``). A local command (``commands``) then runs without any model turn; anything
else starts or reuses the session's execution host, and the turn runs until it settles (see
``turn``). A cancel that arrives while the host is still starting stops
the start and resolves the prompt ``cancelled``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

import anyio

from muse_acp.acp_types import StopReason
from muse_acp.agent import commands, failures
from muse_acp.agent.config_options import host_flags
from muse_acp.agent.execution import ExecutionHost
from muse_acp.agent.prompt_content import convert_prompt
from muse_acp.agent.translate import OutputPolicy, TurnTranslator
from muse_acp.agent.turn import ActiveTurn
from muse_acp.host.binary import HostUnavailable
from muse_acp.host.client import HostEnded, MspHost
from muse_acp.host.versions import supports
from muse_acp.msp_types import TurnInputPart
from muse_acp.rpc import ConnectionClosed, RequestContext, RpcError
from muse_acp_wire import acp

if TYPE_CHECKING:
    from muse_acp.agent.context import AgentContext
    from muse_acp.agent.session import AcpSession

logger: Final = logging.getLogger("muse_acp.agent")


async def _start_host(ctx: AgentContext, session: AcpSession) -> tuple[ExecutionHost, MspHost]:
    execution = session.host
    flags = host_flags(session.settings)
    if execution is not None and execution.usable_for(flags):
        host = execution.host
        assert host is not None
    else:
        if execution is not None:
            execution.close()
        execution = ExecutionHost(ctx, session)
        session.host = execution
        startup = ctx.config.deadlines.startup
        try:
            host = await execution.start()
        except TimeoutError:
            raise failures.deadline_exceeded("starting", startup, False) from None
        except HostEnded as ended:
            raise failures.host_exited("starting", ended.exit_code, ended.stderr_tail) from None
        except ConnectionClosed:
            raise failures.host_exited("starting", None, "") from None
        except HostUnavailable:
            raise
        except RpcError as error:
            raise failures.host_rejected("session/start", error.code, error.message) from None
    try:
        await execution.apply_model(host)
    except TimeoutError:
        raise failures.deadline_exceeded("preparing", ctx.config.deadlines.submit, False) from None
    except RpcError as error:
        raise failures.host_rejected("session/setModel", error.code, error.message) from None
    return execution, host


async def run_turn(
    ctx: AgentContext, session: AcpSession, parts: list[TurnInputPart]
) -> StopReason:
    """Run one model turn on the session's host; the session must already be claimed."""
    with anyio.CancelScope() as starting:
        session.starting = starting
        try:
            execution, host = await _start_host(ctx, session)
        finally:
            session.starting = None
    if starting.cancelled_caught or session.cancel_pending:
        return "cancelled"
    output = OutputPolicy(
        references=ctx.negotiated.output and supports("storedOutput", host.version)
    )
    turn = ActiveTurn(
        ctx, session, host, TurnTranslator(session_id=session.session_id, output=output)
    )
    execution.acquire()
    session.turn = turn
    try:
        return await turn.run(parts)
    finally:
        session.turn = None
        execution.release()
        if turn.host_unsettled or host.dead.is_set():
            execution.close()


async def handle_prompt(
    ctx: AgentContext, params: acp.PromptRequest, _: RequestContext
) -> acp.PromptResponse:
    session = ctx.sessions.require(params.session_id)
    session.claim("a prompt")
    session.cancel_pending = False
    try:
        parts = convert_prompt(params.prompt)
        command = commands.recognise(params.prompt)
        if command is not None:
            stop = await commands.run(ctx, session, command)
        else:
            stop = await run_turn(ctx, session, parts)
    finally:
        session.release()
    return acp.PromptResponse(stop_reason=stop)


async def handle_cancel(ctx: AgentContext, params: acp.CancelNotification) -> None:
    session = ctx.sessions.get(params.session_id)
    if session is None or session.closed:
        logger.debug("session/cancel for unknown or closed session %s", params.session_id)
        return
    cancel_session_work(session)


def cancel_session_work(session: AcpSession) -> None:
    """Cancel whatever the session is doing (a starting host or a running turn)."""
    if session.busy is None:
        return
    session.cancel_pending = True
    if session.starting is not None:
        session.starting.cancel()
    if session.turn is not None:
        session.turn.request_cancel()
