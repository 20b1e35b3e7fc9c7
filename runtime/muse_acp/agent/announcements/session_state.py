"""The session state Muse reports between and during turns: usage, model and approval mode.

Contract: a ``SessionState`` observes every host event relayed for its session (``relay``),
during a turn and after it (``background``), and returns the ACP updates that report what
changed: token and subscription usage (``usage_update``), a model another client chose
(``config_option_update``), an approval mode another client set (moved to the ACP mode that
answers the same way; a restricting mode is never widened). ``allowAll`` while the sandbox is
disabled is never adopted (``safety.refusal``): Muse is set back at once
(``ExecutionHost.secure``) and the chat says so. Item events are noted in ``RunningWork``.
``read_plan_usage`` asks the running host for usage before ``/status`` answers, since
``usage/changed`` is not reliably delivered. A preference that cannot be stored is logged.
An effort the model another client chose does not offer is dropped, and the chat says so.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Final

from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.options.config_options import (
    MODES,
    ModelChoice,
    SessionSettings,
    config_options,
    fit_effort,
)
from muse_acp.agent.options.preferences import SettingsChange
from muse_acp.agent.options.remembered import to_stored
from muse_acp.agent.options.safety import refusal
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.event_kinds import STATE_REPORTS
from muse_acp.agent.translation.translate import Update
from muse_acp.agent.translation.usage import PlanUse, TokenUse, usage_update
from muse_acp.host.client import CLIENT_NAME
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["HOST_MODE_TO_MODE", "SessionState", "read_plan_usage"]

logger: Final = logging.getLogger("muse_acp.agent")

HOST_MODE_TO_MODE: Final[Mapping[str, str]] = MappingProxyType(
    {
        "allowAll": "autoApprove",
        "denyUnmatched": "autoReject",
        "onRequest": "default",
        "promptUnmatched": "default",
    }
)
"""The session mode that answers approvals as Muse's reported approval mode does."""

_NOT_A_CHANGE: Final = frozenset({"startup", "replay"})


def _same_model(a: ModelChoice | None, b: ModelChoice | None) -> bool:
    if a is None or b is None:
        return a is b
    providers = (a.provider_id, b.provider_id)
    return a.model_id == b.model_id and (None in providers or providers[0] == providers[1])


class SessionState:
    """Observes the state Muse reports for one session (see the module contract)."""

    def __init__(self, ctx: AgentContext, session: AcpSession) -> None:
        self._ctx = ctx
        self._session = session

    async def observe(self, method: str, params: WireModel) -> Sequence[Update]:
        if not STATE_REPORTS.holds(params):
            return []
        session = self._session
        if isinstance(params, msp.ItemEventParams):
            session.running.note(params)
        elif isinstance(params, msp.SessionTokenUsageParams):
            session.tokens = TokenUse.from_params(params, session.tokens)
            return self._usage()
        elif isinstance(params, msp.SubscriptionUsage):
            session.plan_usage = PlanUse.from_usage(params)
            return self._usage()
        elif isinstance(params, msp.SessionModelChangedParams):
            return await self._model(params)
        elif isinstance(params, msp.SessionApprovalModeChangedParams):
            return await self._approval_mode(params)
        return []

    def _usage(self) -> list[Update]:
        session = self._session
        update = usage_update(session.context, session.tokens)  # the outlet adds the figures
        return [] if update is None else [update]

    async def _model(self, params: msp.SessionModelChangedParams) -> list[acp.SessionUpdate]:
        session = self._session
        if params.source in _NOT_A_CHANGE:
            return []
        reported = (
            None if params.model_id is None else ModelChoice(params.model_id, params.provider_id)
        )
        asked = session.execution.confirmed_model
        if _same_model(reported, session.settings.model) or (
            asked is not None and _same_model(reported, asked)
        ):
            return []  # nothing new, or muse-acp's own request (the caller updates the settings)
        session.execution.confirmed_model = reported
        settings, dropped = fit_effort(replace(session.settings, model=reported), self._ctx.catalog)
        await self._adopt(settings)
        if dropped is not None:
            await session.tell(dropped.notice())
        return [self._options()]

    async def _approval_mode(
        self, params: msp.SessionApprovalModeChangedParams
    ) -> list[acp.SessionUpdate]:
        session = self._session
        if params.source != "replay":
            session.execution.reported_mode = params.mode
        if params.source in _NOT_A_CHANGE or params.client_name == CLIENT_NAME:
            return []
        if refusal(session.settings.safety, False, params.mode) is not None:
            self._ctx.hosting.tasks.start_soon(self._set_back)
            return []  # the chat hears of it from ``secure``
        current = MODES[session.settings.mode_id]
        if current.host_flags:
            return []  # a restricting mode is left only by the user's own choice
        wanted = HOST_MODE_TO_MODE.get(params.mode, "default")
        if wanted == "default" and current.automatic is None:
            return []  # the session already asks
        if wanted == current.id:
            return []
        await self._adopt(replace(session.settings, mode_id=wanted))
        mode = acp.CurrentModeUpdateSessionUpdate(
            session_update="current_mode_update", current_mode_id=wanted
        )
        return [mode, self._options()]

    async def _set_back(self) -> None:
        """Hold Muse to the safety rule now, on the host that reported the switch."""
        execution = self._session.execution
        host = execution.host
        if host is None or host.dead.is_set():
            return  # the next turn's ``ready`` sets it back on the host it starts
        with contextlib.suppress(ConnectionClosed):  # the client has gone: nobody to tell
            try:
                async with execution.holding(host):
                    await execution.secure(host)
            except RpcError as error:
                logger.warning("Muse's approval mode could not be set back: %s", error.message)
                await self._session.tell(
                    Notice(
                        "error",
                        "muse-acp stopped this session's Muse host: it allowed every action",
                        "Another Muse client set Muse to allow every action unasked while this "
                        "session's sandbox is disabled, and muse-acp could not set it back, so "
                        f"it stopped this session's Muse host: {error.message}",
                    )
                )

    def _options(self) -> acp.ConfigOptionUpdateSessionUpdate:
        return acp.ConfigOptionUpdateSessionUpdate(
            session_update="config_option_update",
            config_options=config_options(self._session.settings, self._ctx.catalog),
        )

    async def _adopt(self, settings: SessionSettings) -> None:
        session = self._session
        change = SettingsChange.between(to_stored(session.settings), to_stored(settings))
        session.settings = settings
        try:
            await self._ctx.preferences.write_settings(session.session_id, change)
        except RpcError as error:
            logger.warning("a setting Muse reported could not be stored: %s", error.message)


async def read_plan_usage(ctx: AgentContext, session: AcpSession) -> None:
    """Refresh the session's subscription usage from its running host (see the contract)."""
    host = session.execution.host
    if host is None or host.dead.is_set():
        return
    if not host.features.has("planUsage"):
        return
    try:
        result = await ask(
            host,
            "usage/read",
            None,
            msp.UsageReadResult,
            phase="reading",
            budget=ctx.config.deadlines.read,
        )
    except RpcError as error:
        logger.info("Muse's usage could not be read: %s", error.message)
        return
    if result.usage is not None:
        session.plan_usage = PlanUse.from_usage(result.usage)
