"""Session lifecycle handlers: new, load, resume, fork and close.

Contract: new, load and resume first check Muse can serve a session (``readiness``); then
``session/new`` needs no host: its UUIDv7 becomes Muse's session id at the first prompt,
recorded so it can be loaded or resumed. Load, resume and fork read through the agent's
lease-free catalog host within the startup and read budgets; load replays history first. A
session that comes back with a turn in progress in Muse (one waiting on the user) is occupied
by it, and the turn is taken up once the load or resume is answered (``waiting_turn``), with
its stored settings read afresh (``remembered``). The client's ``mcpServers`` (-32602 for
servers the installed Muse cannot take) and ``additionalDirectories`` are checked and kept
(``mcp_servers``, ``workspace_roots``). New, fork and close change state inside
``RequestContext.commit``.

Errors: a deleted session is not found (-32002, ``tombstones``); ids are shape-checked first,
quoted redacted and bounded; on the exec backend only new and close work (``not_on_exec``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from typing import Final

from pydantic import ValidationError

from muse_acp.agent.announcements.catalog import refresh_menu, store_dropped_effort
from muse_acp.agent.cards.output_cards import OutputPolicy
from muse_acp.agent.commands import commands
from muse_acp.agent.commands.readiness import prepare
from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.errors.withdrawn import fork_boundary_broken
from muse_acp.agent.errors.workspace import QUOTED_PATH_LIMIT, same_directory
from muse_acp.agent.handshake.capabilities import not_on_exec
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.mcp.mcp_servers import McpServerSpec, check_host, check_servers
from muse_acp.agent.options.config_options import SessionSettings, config_options, session_modes
from muse_acp.agent.options.remembered import restored, stored_elsewhere, to_stored
from muse_acp.agent.options.safety import held_notes
from muse_acp.agent.options.titles import display_title
from muse_acp.agent.prompts.waiting_turn import claim, take_up_soon
from muse_acp.agent.sessions.history import read_row, replay_history
from muse_acp.agent.sessions.session import AcpSession, check_session_id, shown_id
from muse_acp.agent.sessions.workspace_roots import take, workspace_of
from muse_acp.host.binary import HostUnavailable
from muse_acp.host.bindings import error_kind
from muse_acp.host.client import MspHost
from muse_acp.host.features import NO_FEATURES
from muse_acp.ids import new_uuid7
from muse_acp.redact import redact
from muse_acp.rpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    RESOURCE_NOT_FOUND,
    RequestContext,
    RpcError,
)
from muse_acp.rpc.validation import describe_validation_error
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = ["handle_close", "handle_fork", "handle_load", "handle_new", "handle_resume"]

logger: Final = logging.getLogger("muse_acp.agent")


async def _mcp_servers(
    ctx: AgentContext, servers: Sequence[acp.McpServer] | None
) -> tuple[McpServerSpec, ...]:
    """The client's MCP servers, checked, and refused unless the installed Muse takes them
    for a single session (see ``mcp_servers``); kept by the session in memory only."""
    checked = check_servers(servers)
    if not checked:
        return ()
    try:
        choice = await ctx.backend()
    except HostUnavailable:
        return checked  # the first prompt reports what is wrong with Muse
    check_host(checked, NO_FEATURES if choice.exec else ctx.startup.expected(choice.binary))
    return checked


def _not_on_host(session_id: str, error: RpcError) -> RpcError | None:
    if error_kind(error) != "sessionNotFound":
        return None
    return RpcError(
        RESOURCE_NOT_FOUND,
        f"Muse has no session {shown_id(session_id)}; pick one from session/list",
        {"sessionId": shown_id(session_id)},
    )


async def _read_session(ctx: AgentContext, host: MspHost, session_id: str, cwd: str) -> msp.Session:
    await ctx.tombstones.refuse(session_id)  # deleted here, though Muse may still have it
    row = await read_row(
        host, session_id, ctx.config.deadlines.read, partial(_not_on_host, session_id)
    )
    if not same_directory(row.workspace_root, cwd):
        raise RpcError(
            INVALID_PARAMS,
            f"session {shown_id(session_id)} belongs to another workspace "
            f"({redact(clip(row.workspace_root or '', QUOTED_PATH_LIMIT))}); open "
            "it from that directory",
        )
    return row


def _refuse_busy(ctx: AgentContext, session_id: str, doing: str) -> None:
    """Refuse to load, resume or fork a session while something runs on it here."""
    live = ctx.sessions.get(session_id)
    if live is not None and not live.closed and live.busy is not None:
        raise RpcError(
            INVALID_REQUEST,
            f"session {shown_id(session_id)} is busy with {live.busy}; {doing} it once that "
            "has finished or been cancelled",
            {"busy": live.busy},
        )


async def _bring_back(
    ctx: AgentContext, session_id: str, cwd: str, title: str | None, *, on_host: bool = True
) -> tuple[AcpSession, list[str]]:
    """Register a session, replacing a closed or idle earlier copy, with the settings it was
    left with (the stored ones, read now, since another muse-acp process may have changed them;
    else this process's copy); also say what could not be used."""
    _refuse_busy(ctx, session_id, "load")
    kept = await ctx.preferences.read(session_id)
    previous = ctx.sessions.get(session_id)
    notes = [] if kept.problem is None else [kept.problem]
    settings = previous.settings if previous is not None else None
    if kept.settings is not None:
        settings, unusable = restored(kept.settings, ctx.catalog)
        notes += unusable
        await store_dropped_effort(ctx, session_id, kept.settings.effort, settings)
    session = ctx.new_session(
        session_id,
        cwd,
        settings=settings,
        on_host=on_host,
        host_title=title,
        user_title=kept.user_title,
    )
    return session, notes + held_notes(session.settings.safety)


async def _reopen(
    ctx: AgentContext, host: MspHost, session_id: str, cwd: str
) -> tuple[AcpSession, list[str], msp.Session | None]:
    """Bring back a session Muse has (with its row), or one ``session/new`` created in ``cwd``
    that Muse does not have yet (it was never prompted: ``on_host`` False, nothing to replay, no
    row), from the adapter's record of it; any other session is Muse's -32002."""
    try:
        row = await _read_session(ctx, host, session_id, cwd)
    except RpcError as missing:
        if missing.code != RESOURCE_NOT_FOUND:
            raise
        kept = await ctx.preferences.read(session_id)
        if kept.created_cwd is None or not same_directory(kept.created_cwd, cwd):
            raise
        return *(await _bring_back(ctx, session_id, cwd, None, on_host=False)), None
    return *(await _bring_back(ctx, session_id, cwd, display_title(None, row))), row


def _take_up_waiting(
    rctx: RequestContext, ctx: AgentContext, session: AcpSession, row: msp.Session | None
) -> None:
    """Occupy the session with a turn Muse has in progress, taken up once the load or resume
    is answered (``waiting_turn``)."""
    work = None if row is None else claim(session, row)
    if work is not None:
        rctx.after_response(partial(take_up_soon, ctx, session, work))


async def _tell(session: AcpSession, notes: list[str]) -> None:
    """Show the user, in the session's chat, what of the adapter's own records was unusable."""
    for note in notes:
        text = f"muse-acp could not use its own records of this session: {note}"
        await session.tell(Notice("warning", "muse-acp could not use its records", text))


async def handle_new(
    ctx: AgentContext, params: acp.NewSessionRequest, rctx: RequestContext
) -> acp.NewSessionResponse:
    cwd, further = await workspace_of(ctx.startup, ctx.on_exec, params)
    servers = await _mcp_servers(ctx, params.mcp_servers)
    await prepare(ctx, cwd)
    on_exec = await ctx.on_exec()
    async with rctx.commit():  # withdrawn before this, no session exists or is recorded
        session = ctx.new_session(new_uuid7(), cwd)
        session.mcp_servers = servers
        # Muse learns of the session at its first prompt; until then this record is what lets
        # it be loaded or resumed, here or after a restart.
        try:
            await ctx.preferences.write_created(session.session_id, cwd)
        except RpcError as error:
            logger.warning("%s", error.message)
            note = f"it cannot be loaded again before its first prompt ({error.message})"
            rctx.after_response(partial(_tell, session, [note]))
        rctx.after_response(partial(_tell, session, await take(ctx.preferences, session, further)))
    if not on_exec:  # exec: no local commands
        rctx.after_response(partial(commands.advertise, ctx, session))
    return acp.NewSessionResponse(
        session_id=session.session_id,
        modes=session_modes(session.settings),
        config_options=config_options(session.settings, ctx.catalog),
    )


async def handle_load(
    ctx: AgentContext, params: acp.LoadSessionRequest, rctx: RequestContext
) -> acp.LoadSessionResponse:
    if await ctx.on_exec():
        raise not_on_exec("session/load")
    session_id = check_session_id(params.session_id)
    cwd, further = await workspace_of(ctx.startup, ctx.on_exec, params)
    servers = await _mcp_servers(ctx, params.mcp_servers)
    await prepare(ctx, cwd)
    async with ctx.catalog_host(cwd) as host:
        session, notes, row = await _reopen(ctx, host, session_id, cwd)
        session.mcp_servers = servers
        notes += await take(ctx.preferences, session, further)
        if session.on_host:
            output = OutputPolicy(
                references=ctx.negotiated.output and host.features.has("storedOutput"),
                terminal=ctx.negotiated.terminal_output,
            )
            await replay_history(session, host, output, ctx.config.deadlines.read)
    if session.title:
        await session.outlet.send(
            acp.SessionInfoUpdateSessionUpdate(
                session_update="session_info_update", title=session.title
            ),
        )
    await _tell(session, notes)
    _take_up_waiting(rctx, ctx, session, row)
    rctx.after_response(partial(commands.advertise, ctx, session))
    rctx.after_response(partial(refresh_menu, ctx, session))  # on the host the load used
    return acp.LoadSessionResponse(
        modes=session_modes(session.settings),
        config_options=config_options(session.settings, ctx.catalog),
    )


async def handle_resume(
    ctx: AgentContext, params: acp.ResumeSessionRequest, rctx: RequestContext
) -> acp.ResumeSessionResponse:
    if await ctx.on_exec():
        raise not_on_exec("session/resume")
    session_id = check_session_id(params.session_id)
    cwd, further = await workspace_of(ctx.startup, ctx.on_exec, params)
    servers = await _mcp_servers(ctx, params.mcp_servers)
    await prepare(ctx, cwd)
    _refuse_busy(ctx, session_id, "resume")
    live = ctx.sessions.get(session_id)
    notes: list[str] = []
    row: msp.Session | None = None
    if (
        live is not None
        and not live.closed
        and same_directory(live.cwd, cwd)
        and (await _stored_as_live(ctx, live))
    ):
        session, reopened = live, False
    else:
        async with ctx.catalog_host(cwd) as host:
            session, notes, row = await _reopen(ctx, host, session_id, cwd)
        reopened = True
    session.mcp_servers = servers  # a live host re-attaches with them before the next turn
    notes += await take(ctx.preferences, session, further)
    _take_up_waiting(rctx, ctx, session, row)
    rctx.after_response(partial(_announce_resumed, ctx, session, notes))
    if reopened:
        rctx.after_response(partial(refresh_menu, ctx, session))  # on the host it used
    return acp.ResumeSessionResponse(
        modes=session_modes(session.settings),
        config_options=config_options(session.settings, ctx.catalog),
    )


async def _announce_resumed(ctx: AgentContext, session: AcpSession, notes: list[str]) -> None:
    """After a resume: the current title (no history is replayed), any problem with the
    adapter's own records, and the commands."""
    if session.title:
        await session.outlet.send(
            acp.SessionInfoUpdateSessionUpdate(
                session_update="session_info_update", title=session.title
            ),
        )
    await _tell(session, notes)
    await commands.advertise(ctx, session)


async def _stored_as_live(ctx: AgentContext, live: AcpSession) -> bool:
    """Whether the stored settings would bring the live session back as it is; when another
    muse-acp process changed them, it is brought back from the store like any other."""
    kept = await ctx.preferences.read(live.session_id)
    if kept.settings is None:
        return True
    current = live.settings
    return stored_elsewhere(current, to_stored(current), kept.settings, ctx.catalog) == current


async def _stored_settings(ctx: AgentContext, session_id: str) -> SessionSettings:
    kept = await ctx.preferences.read(session_id)
    return SessionSettings() if kept.settings is None else restored(kept.settings, ctx.catalog)[0]


def _fork_boundary(params: acp.ForkSessionRequest) -> msp.ForkCutPoint | None:
    """The turn the client asked to cut the fork after, if any."""
    try:
        meta = acp.MuseForkRequestMeta.model_validate(params.field_meta or {})
    except ValidationError as error:
        raise RpcError(
            INVALID_PARAMS,
            f'_meta["muse/fork"] must be {{"lastTurnId": "<a completed turn of the source>"}} '
            f"({describe_validation_error(error, params.field_meta)})",
        ) from None
    boundary = meta.muse_fork
    return None if boundary is None else msp.ForkCutPoint(last_turn_id=boundary.last_turn_id)


def _fork_refused(source_id: str, cut: msp.ForkCutPoint | None, error: RpcError) -> RpcError | None:
    if error_kind(error) != "forkBoundaryInvalid" or cut is None:
        return None
    return RpcError(
        INVALID_PARAMS,
        f"Muse cannot cut a fork of session {shown_id(source_id)} after turn "
        f"{clip(cut.last_turn_id, 100)!r}: it is not a completed turn of that session. Name a "
        "completed turn, or leave the boundary out to fork after the last one",
    )


async def handle_fork(
    ctx: AgentContext, params: acp.ForkSessionRequest, rctx: RequestContext
) -> acp.ForkSessionResponse:
    if await ctx.on_exec():
        raise not_on_exec("session/fork")
    source_id = check_session_id(params.session_id)
    cwd, further = await workspace_of(ctx.startup, ctx.on_exec, params)
    servers = await _mcp_servers(ctx, params.mcp_servers)
    cut = _fork_boundary(params)
    installed = await ctx.startup.installed()
    if cut is not None and "turnForkBoundary" in installed.withdrawn:
        raise fork_boundary_broken(installed.version)
    _refuse_busy(ctx, source_id, "fork")
    live = ctx.sessions.get(source_id)
    # The fork stays held by the host that made it: that host is closed right after, and the
    # fork's own execution host waits until it is gone.
    async with ctx.one_off_host(cwd) as (host, keeper):
        await _read_session(ctx, host, source_id, cwd)
        source = live.settings if live is not None else await _stored_settings(ctx, source_id)
        async with rctx.commit():  # Muse's fork and this agent's record of it, or neither
            result = await ask(
                host,
                "session/fork",
                msp.SessionForkParams(
                    command_id=new_uuid7(), session_id=source_id, cut_point=cut, exclude_items=True
                ),
                msp.SessionHistoryResult,
                phase="reading",
                budget=ctx.config.deadlines.read,
                refusal=partial(_fork_refused, source_id, cut),
            )
            # A fork keeps the source's model and effort but starts in the default mode: the
            # mode is a decision about this conversation, not the one it came from.
            forked = ctx.new_session(
                result.session.session_id,
                cwd,
                settings=SessionSettings(model=source.model, effort=source.effort),
                on_host=True,
                host_title=display_title(None, result.session),
                after=keeper,
            )
            forked.mcp_servers = servers
            told = await take(ctx.preferences, forked, further)
            rctx.after_response(partial(_tell, forked, told))
    origin = result.session.forked_from
    provenance = acp.MuseForkMeta(
        muse_fork=acp.MuseForkProvenance(
            source_session_id=origin.session_id if origin else source_id,
            cut_cursor=origin.cut_cursor if origin else "",
            explicit_boundary=origin.cut_explicit if origin else cut is not None,
        )
    )
    return acp.ForkSessionResponse(
        session_id=forked.session_id,
        modes=session_modes(forked.settings),
        config_options=config_options(forked.settings, ctx.catalog),
        field_meta=provenance.model_dump(mode="json", by_alias=True, exclude_none=True),
    )


async def handle_close(
    ctx: AgentContext, params: acp.CloseSessionRequest, rctx: RequestContext
) -> acp.CloseSessionResponse:
    session = ctx.sessions.require(params.session_id)
    async with rctx.commit():
        session.close()
    return acp.CloseSessionResponse()
