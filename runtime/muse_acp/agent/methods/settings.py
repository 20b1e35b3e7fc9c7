"""``session/set_mode`` and ``session/set_config_option``.

Contract: settings change only between turns (-32600 while busy), inside the request's commit.
A change into an unsafe combination is refused (-32602, ``safety.check_combination``). A change
that needs other host flags or another approval policy closes the session's host for the next
prompt; a new model is confirmed by a running host before the answer (a refusal is an error,
the previous model stays), else applied at the next turn. Every change answers with the whole
option list and announces it (``config_option_update``, and ``current_mode_update`` for a mode)
after the response. Only what changed is stored (``preferences``), and settings another
process stored meanwhile, or Muse reported during a model's confirmation, are kept.
The effort values are the current model's; an effort a new model does not offer is dropped
for Muse's default (``fit_effort``), and the chat says so.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Final

from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.options.config_options import (
    MODES,
    SessionSettings,
    apply_config_option,
    apply_mode,
    config_options,
    current_names,
    fit_effort,
    host_flags,
)
from muse_acp.agent.options.preferences import SettingsChange
from muse_acp.agent.options.remembered import stored_elsewhere, to_stored
from muse_acp.agent.options.safety import APPROVAL_POLICY, check_combination
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.rpc import INVALID_REQUEST, RequestContext, RpcError
from muse_acp.text import quoted
from muse_acp_wire import acp

__all__ = ["handle_set_config_option", "handle_set_mode"]

logger: Final = logging.getLogger("muse_acp.agent")


def _auto(settings: SessionSettings) -> bool:
    return MODES[settings.mode_id].automatic == "approve"


def _change(session: AcpSession, settings: SessionSettings) -> None:
    """Apply new settings between turns; a change of host flags or of Muse's approval policy
    retires the current host, so the next prompt starts one that has them."""
    if session.busy is not None:
        raise RpcError(
            INVALID_REQUEST,
            f"session {session.session_id} is busy with {session.busy}; change settings once "
            "it is idle (safety and mode changes apply when Muse's host starts again, which "
            "cannot happen during a turn)",
            {"busy": session.busy},
        )
    check_combination(
        settings.safety, _auto(settings), (session.settings.safety, _auto(session.settings))
    )
    policy = settings.safety.value(APPROVAL_POLICY)
    if host_flags(settings) != host_flags(
        session.settings
    ) or policy != session.settings.safety.value(APPROVAL_POLICY):
        session.execution.close()
    session.settings = settings


def _announce(
    ctx: AgentContext, session: AcpSession, mode_changed: bool, rctx: RequestContext
) -> None:
    async def announce() -> None:
        if mode_changed:
            await session.outlet.send(
                acp.CurrentModeUpdateSessionUpdate(
                    session_update="current_mode_update",
                    current_mode_id=session.settings.mode_id,
                ),
            )
        await session.outlet.send(
            acp.ConfigOptionUpdateSessionUpdate(
                session_update="config_option_update",
                config_options=config_options(session.settings, ctx.catalog),
            ),
        )

    rctx.after_response(announce)


async def _remember(
    ctx: AgentContext, session: AcpSession, before: SessionSettings, rctx: RequestContext
) -> None:
    """Store what changed from ``before`` before answering, so a client that exits right after
    the answer (one process per command) still finds it on its next start; then take what
    other muse-acp processes stored for this session meanwhile."""
    wrote = to_stored(session.settings)
    change = SettingsChange.between(to_stored(before), wrote)
    try:
        stored = await ctx.preferences.write_settings(session.session_id, change)
    except RpcError as error:
        logger.warning("%s", error.message)
        note = (
            "This setting applies now but could not be stored, so it will not survive a "
            f"restart: {error.message}"
        )
        rctx.after_response(partial(session.tell, Notice("warning", "Setting not stored", note)))
        return
    theirs = stored_elsewhere(session.settings, wrote, stored, ctx.catalog)
    if theirs != session.settings:
        try:
            _change(session, theirs)
        except RpcError as error:  # another process's choices do not combine with this one's
            logger.warning("settings stored by another process are not taken: %s", error.message)
            text = (
                "Another muse-acp process stored settings for this session that do not combine "
                f"with the ones chosen here, so they were not taken: {error.message}"
            )
            # Before notices this was only logged: a plain client still hears nothing of it.
            notice = Notice("warning", "Settings from elsewhere not taken", text, chat=False)
            rctx.after_response(partial(session.tell, notice))


async def handle_set_mode(
    ctx: AgentContext, params: acp.SetSessionModeRequest, rctx: RequestContext
) -> acp.SetSessionModeResponse:
    session = ctx.sessions.require(params.session_id)
    before = session.settings
    new = apply_mode(before, params.mode_id)
    async with rctx.commit():  # a withdrawn request changes nothing; a late cancel is ignored
        _change(session, new)
        if new != before:
            await _remember(ctx, session, before, rctx)
            _announce(ctx, session, True, rctx)
    return acp.SetSessionModeResponse()


async def _confirm_model(
    ctx: AgentContext, session: AcpSession, new: SessionSettings, value: str
) -> None:
    """Have the session's running host confirm a new model before the change is answered."""
    if new.model is None or new.model == session.settings.model:
        return
    work = session.begin("a model change")
    try:
        kept = quoted(current_names(session.settings, ctx.catalog)["model"])
        await session.execution.confirm_model(new.model, value, kept)
    finally:
        session.end(work)


async def handle_set_config_option(
    ctx: AgentContext, params: acp.SetSessionConfigOptionRequest, rctx: RequestContext
) -> acp.SetSessionConfigOptionResponse:
    session = ctx.sessions.require(params.session_id)
    new = apply_config_option(session.settings, params.config_id, params.value, ctx.catalog)
    # The commit starts with the model's confirmation: a host that switched models is a change.
    async with rctx.commit():
        await _confirm_model(ctx, session, new, str(params.value))
        before = session.settings
        # Settings Muse reported while it confirmed (another client's mode, say) stay: the
        # option is applied to what the session has now, not to what it had before the wait.
        new = apply_config_option(before, params.config_id, params.value, ctx.catalog)
        # A model that lacks the session's effort: Muse's default for it applies, told.
        new, dropped = fit_effort(new, ctx.catalog)
        _change(session, new)
        if dropped is not None:
            rctx.after_response(partial(session.tell, dropped.notice()))
        if new != before:
            await _remember(ctx, session, before, rctx)
            _announce(ctx, session, session.settings.mode_id != before.mode_id, rctx)
    return acp.SetSessionConfigOptionResponse(
        config_options=config_options(session.settings, ctx.catalog)
    )
