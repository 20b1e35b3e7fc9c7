"""Session lifecycle handlers: new, load, resume, fork, list and close.

``session/new`` needs no host: the adapter mints a UUIDv7 that becomes Muse's session id at
the first prompt. Load, resume, fork and list use a short-lived read-only host (no lease, so a
session running elsewhere can still be read), bounded by the startup and read budgets. Load
replays history before it answers; resume and fork do not. Every session-scoped request checks
the id's shape first, since ids also name preference files.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Final

import anyio

from muse_acp.agent import commands, failures, read_hosts, steering
from muse_acp.agent.config_options import config_options, session_modes
from muse_acp.agent.history import replay_history
from muse_acp.agent.prompting import cancel_session_work
from muse_acp.agent.session import AcpSession, check_session_id
from muse_acp.agent.titles import display_title
from muse_acp.agent.translate import OutputPolicy
from muse_acp.host.client import HostEnded, MspHost
from muse_acp.host.versions import supports
from muse_acp.ids import new_uuid7
from muse_acp.msp_types import msp
from muse_acp.redact import clip
from muse_acp.rpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    RESOURCE_NOT_FOUND,
    ConnectionClosed,
    RequestContext,
    RpcError,
)
from muse_acp_wire import acp

if TYPE_CHECKING:
    from muse_acp.agent.context import AgentContext

logger: Final = logging.getLogger("muse_acp.agent")

LIST_PAGE_SIZE: Final = 50
QUOTED_PATH_LIMIT: Final = 300
"""Longest part of a client's path quoted back in an error."""
SESSION_NOT_FOUND: Final = -32020


def check_workspace(cwd: str, additional: Sequence[str] | None) -> str:
    """Validate a session's workspace root; Muse serves exactly one per session."""
    if additional:
        raise RpcError(
            INVALID_PARAMS,
            "Muse serves one workspace root per session; additionalDirectories are not "
            "supported, so start a separate session for each other directory",
            {"availability": "unsupported"},
        )
    # The path is the client's own, but quoted whole it could make an error of megabytes.
    quoted = clip(cwd, QUOTED_PATH_LIMIT)
    if not os.path.isabs(cwd):
        raise RpcError(INVALID_PARAMS, f"cwd must be an absolute path, got {quoted!r}")
    if not os.path.isdir(cwd):
        raise RpcError(INVALID_PARAMS, f"the workspace directory {quoted} does not exist")
    return cwd


def _same_directory(left: str | None, right: str) -> bool:
    return left is not None and os.path.realpath(left) == os.path.realpath(right)


def _warn_mcp(servers: Sequence[object] | None) -> None:
    if servers:
        logger.warning(
            "ignoring %d MCP server(s) from the client: Muse uses its own MCP configuration",
            len(servers),
        )


@asynccontextmanager
async def reading(ctx: AgentContext, cwd: str) -> AsyncIterator[MspHost]:
    """A read-only host with the read budget applied to everything done with it.

    Raises:
        RpcError: a ``deadlineExceeded`` failure of the ``starting`` phase when the host did not
            finish its handshake within the startup budget, or of the ``reading`` phase when
            the work ran out of the read budget; a ``hostExited`` failure when the host ended.
    """
    deadlines = ctx.config.deadlines
    opened: list[MspHost] = []
    try:
        async with ctx.read_host(cwd) as host:
            opened.append(host)
            with anyio.fail_after(deadlines.read):
                yield host
    except TimeoutError:
        if not opened:  # the host never finished its handshake: the startup budget ran out
            raise failures.deadline_exceeded("starting", deadlines.startup, False) from None
        raise failures.deadline_exceeded("reading", deadlines.read, False) from None
    except HostEnded as ended:
        raise failures.host_exited("reading", ended.exit_code, ended.stderr_tail) from None
    except ConnectionClosed:
        # The host is closed and reaped by now, so how it ended is known.
        code, stderr_tail = opened[0].exit_summary() if opened else (None, "")
        raise failures.host_exited("reading", code, stderr_tail) from None


async def _read_session(host: MspHost, session_id: str, cwd: str) -> msp.Session:
    try:
        result = await host.call(
            "session/read",
            msp.SessionReadParams(session_id=session_id, exclude_items=True),
            msp.SessionHistoryResult,
        )
    except ConnectionClosed:
        raise  # the host is gone, not refusing: ``reading`` reports how it ended
    except RpcError as error:
        if error.code == SESSION_NOT_FOUND:
            raise RpcError(
                RESOURCE_NOT_FOUND,
                f"Muse has no session {session_id}; pick one from session/list",
                {"sessionId": session_id},
            ) from None
        raise failures.host_rejected(
            "session/read", error.code, error.message, phase="reading"
        ) from None
    if not _same_directory(result.session.workspace_root, cwd):
        raise RpcError(
            INVALID_PARAMS,
            f"session {session_id} belongs to another workspace "
            f"({result.session.workspace_root}); open it from that directory",
        )
    return result.session


def _bring_back(ctx: AgentContext, session_id: str, cwd: str, title: str | None) -> AcpSession:
    """Register a session Muse already has, replacing a closed or idle earlier copy."""
    previous = ctx.sessions.get(session_id)
    if previous is not None and not previous.closed and previous.busy is not None:
        raise RpcError(
            INVALID_REQUEST,
            f"session {session_id} is busy with {previous.busy}; wait for it or cancel it first",
        )
    settings = previous.settings if previous is not None else None
    user_title = ctx.preferences.load(session_id).user_title
    session = AcpSession(session_id, cwd, on_host=True, host_title=title, user_title=user_title)
    if settings is not None:
        session.settings = settings
    if previous is not None and previous.host is not None:
        previous.host.close()
    return ctx.sessions.add(session)


def _title_of(row: msp.Session) -> str | None:
    return display_title(None, row)


async def handle_new(
    ctx: AgentContext, params: acp.NewSessionRequest, rctx: RequestContext
) -> acp.NewSessionResponse:
    cwd = check_workspace(params.cwd, params.additional_directories)
    _warn_mcp(params.mcp_servers)
    session = ctx.sessions.add(AcpSession(new_uuid7(), cwd))
    rctx.after_response(partial(commands.advertise, ctx, session))
    return acp.NewSessionResponse(
        session_id=session.session_id,
        modes=session_modes(session.settings),
        config_options=config_options(session.settings, ctx.catalog),
    )


async def handle_load(
    ctx: AgentContext, params: acp.LoadSessionRequest, rctx: RequestContext
) -> acp.LoadSessionResponse:
    session_id = check_session_id(params.session_id)
    cwd = check_workspace(params.cwd, params.additional_directories)
    _warn_mcp(params.mcp_servers)
    async with reading(ctx, cwd) as host:
        row = await _read_session(host, session_id, cwd)
        session = _bring_back(ctx, session_id, cwd, _title_of(row))
        output = OutputPolicy(
            references=ctx.negotiated.output and supports("storedOutput", host.version)
        )
        await replay_history(ctx, session, host, output)
    if session.title:
        await ctx.send_update(
            session,
            acp.SessionInfoUpdateSessionUpdate(
                session_update="session_info_update", title=session.title
            ),
        )
    rctx.after_response(partial(commands.advertise, ctx, session))
    return acp.LoadSessionResponse(
        modes=session_modes(session.settings),
        config_options=config_options(session.settings, ctx.catalog),
    )


async def handle_resume(
    ctx: AgentContext, params: acp.ResumeSessionRequest, rctx: RequestContext
) -> acp.ResumeSessionResponse:
    session_id = check_session_id(params.session_id)
    cwd = check_workspace(params.cwd, params.additional_directories)
    _warn_mcp(params.mcp_servers)
    live = ctx.sessions.get(session_id)
    if live is not None and not live.closed and _same_directory(live.cwd, cwd):
        session = live
    else:
        async with reading(ctx, cwd) as host:
            row = await _read_session(host, session_id, cwd)
        session = _bring_back(ctx, session_id, cwd, _title_of(row))
    rctx.after_response(partial(_announce_resumed, ctx, session))
    return acp.ResumeSessionResponse(
        modes=session_modes(session.settings),
        config_options=config_options(session.settings, ctx.catalog),
    )


async def _announce_resumed(ctx: AgentContext, session: AcpSession) -> None:
    """After a resume: the current title (no history is replayed) and the commands."""
    if session.title:
        await ctx.send_update(
            session,
            acp.SessionInfoUpdateSessionUpdate(
                session_update="session_info_update", title=session.title
            ),
        )
    await commands.advertise(ctx, session)


async def handle_fork(
    ctx: AgentContext, params: acp.ForkSessionRequest, _: RequestContext
) -> acp.ForkSessionResponse:
    source_id = check_session_id(params.session_id)
    cwd = check_workspace(params.cwd, params.additional_directories)
    _warn_mcp(params.mcp_servers)
    live = ctx.sessions.get(source_id)
    if live is not None and not live.closed and live.busy is not None:
        raise RpcError(INVALID_REQUEST, f"session {source_id} is busy; fork it once it is idle")
    async with reading(ctx, cwd) as host:
        await _read_session(host, source_id, cwd)
        try:
            result = await host.call(
                "session/fork",
                msp.SessionForkParams(
                    command_id=new_uuid7(), session_id=source_id, exclude_items=True
                ),
                msp.SessionHistoryResult,
            )
        except ConnectionClosed:
            raise  # the host is gone, not refusing: ``reading`` reports how it ended
        except RpcError as error:
            raise failures.host_rejected(
                "session/fork", error.code, error.message, phase="reading"
            ) from None
    forked = ctx.sessions.add(
        AcpSession(
            result.session.session_id, cwd, on_host=True, host_title=_title_of(result.session)
        )
    )
    if live is not None:
        forked.settings = live.settings
    return acp.ForkSessionResponse(
        session_id=forked.session_id,
        modes=session_modes(forked.settings),
        config_options=config_options(forked.settings, ctx.catalog),
    )


def _encode_cursor(cwd: str | None, host_cursor: str) -> str:
    raw = json.dumps({"v": 1, "cwd": cwd, "next": host_cursor}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, cwd: str | None) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        valid = isinstance(data, dict) and data.get("v") == 1 and isinstance(data.get("next"), str)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        valid = False
    if not valid or data.get("cwd") != cwd:
        raise RpcError(
            INVALID_PARAMS,
            "the session cursor is not one this agent issued for this listing; list again "
            "without a cursor",
        )
    host_cursor: str = data["next"]
    return host_cursor


async def handle_list(
    ctx: AgentContext, params: acp.ListSessionsRequest, _: RequestContext
) -> acp.ListSessionsResponse:
    cwd = params.cwd
    if cwd is not None:
        check_workspace(cwd, None)
    host_cursor = _decode_cursor(params.cursor, cwd) if params.cursor else None
    async with reading(ctx, cwd or os.getcwd()) as host:
        try:
            page = await host.call(
                "session/list",
                msp.SessionListParams(limit=LIST_PAGE_SIZE, cursor=host_cursor, workspace_root=cwd),
                msp.SessionListResult,
            )
        except ConnectionClosed:
            raise  # the host is gone, not refusing: ``reading`` reports how it ended
        except RpcError as error:
            raise failures.host_rejected(
                "session/list", error.code, error.message, phase="reading"
            ) from None
    sessions = [
        acp.SessionInfo(
            session_id=row.session_id,
            cwd=row.workspace_root,
            title=display_title(ctx.preferences.load(row.session_id).user_title, row),
            updated_at=row.updated_at,
        )
        for row in page.sessions
        if row.workspace_root
    ]
    response = acp.ListSessionsResponse(sessions=sessions)
    if page.next_cursor:
        response.next_cursor = _encode_cursor(cwd, page.next_cursor)
    return response


async def handle_close(
    ctx: AgentContext, params: acp.CloseSessionRequest, _: RequestContext
) -> acp.CloseSessionResponse:
    session = ctx.sessions.require(params.session_id)
    close_session(session)
    return acp.CloseSessionResponse()


def close_session(session: AcpSession) -> None:
    """Close a session: stop its work and hosts; it stays known as closed."""
    session.closed = True
    steering.discard(session)
    read_hosts.discard(session)
    cancel_session_work(session)
    if session.host is not None:
        session.host.close()
