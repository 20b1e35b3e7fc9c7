"""The execution host of one ACP session: the ``muse serve`` process that runs its turns.

Contract: ``ready()`` returns a host serving the session with its mode's flags and chosen model,
reusing the running one unless the flags changed. Starting attaches the session
(``session/resume``, else ``session/start`` under the minted id), passes its MCP servers (in the
request, or a ``mcp_overlay``), gives it an interactive permission profile in place of a saved
``:auto-review`` (the same overlay, ``permission_profile``) and sets its approval policy
(``approval_policy``). Before every turn the safety rule holds (``safety.check_runnable``): a
Muse left in ``allowAll`` with the sandbox disabled is set back (``secure``) or the turn is
refused. A ``HostKeeper`` keeps the host; a successor never starts before its predecessor was
reaped. ``confirm_model`` asks a running host for a new model at once.

Errors: ACP failures of the ``starting`` or ``preparing`` phase, nothing submitted (a session
Muse cannot run under its saved profile: ``permission_profile.profile_refusal``); a model Muse
refuses is a ``ModelRefusal`` naming the model that stays (``confirmed_model``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Final, Protocol

import anyio

from muse_acp.agent.errors import failures
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.hosting.approval_policy import apply_policy, set_back
from muse_acp.agent.hosting.hosts import HostKeeper, Refusal, SetupFailure, ask
from muse_acp.agent.hosting.mcp_overlay import (
    UserSettings,
    overlay_root,
    read_user_settings,
    settings_overlay,
)
from muse_acp.agent.hosting.permission_profile import interactive, profile_refusal
from muse_acp.agent.hosting.starting import Hosting
from muse_acp.agent.mcp.mcp_config import session_config
from muse_acp.agent.mcp.mcp_servers import McpServerSpec, delivery, startup_failure
from muse_acp.agent.options.config_options import MODES, ModelChoice, SessionSettings, host_flags
from muse_acp.agent.options.safety import check_runnable, refusal
from muse_acp.host.bindings import error_kind
from muse_acp.host.client import EventListener, MspHost
from muse_acp.host.session_mcp import SESSION_MCP
from muse_acp.ids import new_uuid7
from muse_acp.rpc import RpcError
from muse_acp_wire import msp

__all__ = ["ExecutionHost", "HostedSession"]

logger: Final = logging.getLogger("muse_acp.agent")


class HostedSession(Protocol):
    """What the execution host needs of its session (``session.AcpSession`` is one)."""

    @property
    def session_id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def settings(self) -> SessionSettings: ...

    on_host: bool
    """Muse already has the session (resume it) rather than not yet (start it)."""
    mcp_servers: tuple[McpServerSpec, ...]
    """The editor's MCP servers, passed in ``config`` whenever the session is attached."""
    further_roots: tuple[str, ...]
    """Workspace roots after ``cwd``, given to a Muse that takes ``workspaceRoots``."""
    roots_unsent: bool
    """The next turn must name the session's roots (a resumed session's host may lack them)."""

    async def tell(self, notice: Notice) -> None:
        """Warn the session's user (``errors.notices``)."""
        ...


class _NotOnHost(RpcError):
    """``session/resume`` found no such session: it must be started instead."""


class ExecutionHost:
    """The host process serving one session's turns (see the module contract)."""

    def __init__(
        self, session: HostedSession, hosting: Hosting, after: HostKeeper | None = None
    ) -> None:
        self._session = session
        self._hosting = hosting
        self.keeper: HostKeeper = HostKeeper(
            f"execution host of {session.session_id}",
            hosting,
            idle=hosting.config.deadlines.idle,
            after=after,
        )
        self._flags: tuple[str, ...] = ()
        self._mcp_attached: tuple[McpServerSpec, ...] = ()
        self._mcp_overlay = False
        """The attached servers reach the host in a settings overlay, not in ``config``."""
        self._model_applied: ModelChoice | None = None
        self.confirmed_model: ModelChoice | None = None
        """The model Muse last accepted for the session (None: its default), on any host."""
        self.reported_mode: str | None = None
        """Muse's approval mode for the session as it last reported it (None: not known)."""
        self.resumed_turn: str | None = None
        """The turn in progress when the host last resumed the session (None: none)."""
        # A report's set-back and the next turn's, one at a time; taken free without a loop
        # pass (nearly every turn), so a prompt does not wait behind whatever else is ready.
        self._securing = anyio.Lock(fast_acquire=True)
        self._vetted: SessionSettings | None = None
        """The settings the safety rule last passed (``check_runnable``); their flags follow."""
        self._mode_flags: tuple[str, ...] = ()

    def take_resumed_turn(self) -> str | None:
        """The turn Muse had in progress when the running host resumed the session, once (None:
        none, or already taken)."""
        turn_id, self.resumed_turn = self.resumed_turn, None
        return turn_id

    @property
    def host(self) -> MspHost | None:
        """The running host, if there is one."""
        return self.keeper.host

    async def ready(
        self, extra_flags: tuple[str, ...] = (), *, early: EventListener | None = None
    ) -> MspHost:
        """A host for the session's next turn (see the module contract); ``extra_flags`` are
        added to the mode's for a turn that must be more restricted (a review is read-only).
        A host started now hands the session's events to ``early`` from before it attaches
        the session until a turn listens (what Muse sends right after ``session/resume``).

        Raises:
            RpcError: an ACP failure of the ``starting`` or ``preparing`` phase.
        """
        settings = self._session.settings
        if settings is not self._vetted:  # settings are immutable: a new choice is a new object
            check_runnable(settings.safety, _auto(settings), None)
            self._vetted, self._mode_flags = settings, host_flags(settings)
        flags = self._mode_flags
        if extra_flags:
            flags += tuple(f for f in extra_flags if f not in flags)
        host = self.keeper.host
        if host is None or flags != self._flags or self._session.mcp_servers != self._mcp_attached:
            host = await self._start(flags, early)
        await self.secure(host)
        await self._apply_model(host)
        return host

    def ready_now(self) -> MspHost | None:
        """The host ``ready()`` returns at once, doing nothing, for a turn of the mode's flags;
        None when readying it would start, set back or ask it anything (``ready`` then does),
        or when Muse still has a turn of its own from the session's resume."""
        host = self.keeper.host
        settings = self._session.settings
        if (
            host is None
            or settings is not self._vetted
            or self._mode_flags != self._flags
            or self._session.mcp_servers != self._mcp_attached
            or self._set_back_due()
            or self._model_due() is not None
            or self.resumed_turn is not None
        ):
            return None
        return host

    async def secure(self, host: MspHost) -> bool:
        """Set Muse back when its reported approval mode breaks the safety rule; True when it
        had to (and the user was told). A turn's host that cannot be set back is closed.

        Raises:
            RpcError: the turn must not run (see ``safety.check_runnable``).
        """
        if not self._set_back_due():
            return False  # nearly every turn: nothing to set back, and none under way
        async with self._securing:
            settings = self._session.settings
            if refusal(settings.safety, _auto(settings), self.reported_mode) is None:
                return False
            budget = self._hosting.config.deadlines.submit
            try:
                self.reported_mode = await set_back(
                    host, self._session.session_id, settings.safety, budget
                )
            except RpcError:
                self.keeper.close()
                raise
        await self._session.tell(
            Notice(
                "warning",
                "muse-acp set Muse's approval policy back: another client allowed every action",
                "Another Muse client set Muse to allow every action unasked while this session's "
                "sandbox is disabled; muse-acp set Muse's approval policy back to "
                f"{self.reported_mode!r}, so you are asked before Muse acts. Enable the sandbox "
                "first if you want to grant everything unasked.",
            )
        )
        return True

    @asynccontextmanager
    async def holding(self, host: MspHost) -> AsyncIterator[MspHost]:
        """Keep ``host`` from idling out while the block uses it."""
        async with self.keeper.holding(host):
            yield host

    def close(self) -> None:
        """Stop the host (if any); it is reaped in the background."""
        self.keeper.close()

    async def wait_gone(self) -> None:
        await self.keeper.wait_gone()

    async def _start(self, flags: tuple[str, ...], early: EventListener | None) -> MspHost:
        self._flags, self._model_applied = flags, None
        self._mcp_attached = servers = self._session.mcp_servers
        await self._route_servers(servers)
        host = await self.keeper.start(self._session.cwd, flags)
        if early is not None:
            host.follow(self._session.session_id, early)
        try:
            self.reported_mode = await self._attach(host)
            session, budget = self._session, self._hosting.config.deadlines.submit
            applied = await apply_policy(host, session.session_id, session.settings.safety, budget)
            self.reported_mode = applied or self.reported_mode
        except BaseException:
            self.keeper.close()
            raise
        return host

    async def _route_servers(self, servers: tuple[McpServerSpec, ...]) -> None:
        """Set up the next host to get ``servers`` the way its Muse takes them
        (``mcp_servers.delivery``): per session, or in a settings overlay made for it; the
        overlay is made without servers too when the user's settings save ``:auto-review``."""
        keeper, hosting = self.keeper, self._hosting
        keeper.requested, keeper.environment, self._mcp_overlay = (), None, False
        route = None
        if servers:
            route = delivery(servers, hosting.startup.expected(await hosting.muse()))
        if route == "native":
            keeper.requested = (SESSION_MCP,)
        if route == "overlay":
            user: UserSettings | None = await read_user_settings(hosting.environ)
            self._mcp_overlay = True
        else:
            user = await _profile_to_replace(hosting.environ)
        if user is not None:
            keeper.environment = partial(
                settings_overlay,
                overlay_root(hosting.config.data_dir),
                servers if self._mcp_overlay else (),
                user,
            )

    async def _attach(self, host: MspHost) -> str | None:
        """Attach the session; Muse's approval mode for it, when the result reports one."""
        session = self._session
        self.resumed_turn = None
        budget = self._hosting.config.deadlines.startup
        config = None if self._mcp_overlay else session_config(self._mcp_attached)
        extra = {} if config is None else {"config": config}  # absent, never null, without
        if session.on_host:
            params = msp.SessionResumeParams(
                command_id=new_uuid7(), session_id=session.session_id, exclude_items=True, **extra
            )
            try:
                resumed = await ask(
                    host,
                    "session/resume",
                    params,
                    msp.SessionHistoryResult,
                    phase="starting",
                    budget=budget,
                    refusal=lambda error: self._refusal("session/resume", error, host),
                )
                self.resumed_turn = resumed.session.active_turn_id
                # Muse's record of a session has its primary root alone: the turn names them.
                session.roots_unsent = session.roots_unsent or bool(session.further_roots)
                return _mode_of(resumed.session)
            except _NotOnHost:
                logger.info("Muse has no session %s yet; starting it", session.session_id)
        roots = [session.cwd, *session.further_roots] if session.further_roots else None
        started = await ask(
            host,
            "session/start",
            msp.SessionStartParams(
                command_id=new_uuid7(),
                session_id=session.session_id,
                workspace_root=session.cwd,
                workspace_roots=roots if host.features.has("workspaceRoots") else None,
                **extra,
            ),
            msp.SessionStartResult,
            phase="starting",
            budget=budget,
            refusal=lambda error: self._refusal("session/start", error, host),
        )
        session.on_host = True
        session.roots_unsent = False
        return _mode_of(started.session)

    def _refusal(self, method: str, error: RpcError, host: MspHost) -> RpcError | None:
        kind = error_kind(error, host.bindings)
        if kind == "sessionNotFound" and method == "session/resume":
            return _NotOnHost(error.code, error.message, error.data)
        if kind == "sessionInUse":
            return failures.session_in_use(method, self._session.session_id)
        return profile_refusal(error, method, self._session.session_id) or startup_failure(
            error, self._mcp_attached
        )

    async def confirm_model(self, choice: ModelChoice, shown: str, kept: str) -> None:
        """Have a running host switch the session to ``choice`` now, so the change is confirmed
        (or refused) before it is answered; with no host running it is applied, and answered
        for, when the next turn starts.

        Raises:
            RpcError: the host refused the model (the user's ``shown`` choice; ``kept`` names the
                model that stays), or could not be asked.
        """
        host = self.keeper.host
        if host is None or host.dead.is_set():
            return
        async with self.keeper.holding(host):
            await self._set_model(host, choice, partial(failures.model_refused, shown, kept))

    def _set_back_due(self) -> bool:
        """``secure`` has work: a set-back is under way, or Muse's reported mode breaks the rule."""
        settings = self._session.settings
        due = refusal(settings.safety, _auto(settings), self.reported_mode) is not None
        return due or self._securing.locked()

    def _model_due(self) -> ModelChoice | None:
        """The model ``_apply_model`` asks for: the session's choice, when it changed since the
        last turn (None: nothing to ask)."""
        choice = self._session.settings.model
        return None if choice is None or choice == self._model_applied else choice

    async def _apply_model(self, host: MspHost) -> None:
        """Ask Muse for the session's chosen model when it changed since the last turn."""
        choice = self._model_due()
        if choice is None:
            return
        confirmed = self.confirmed_model
        kept = "Muse's default model" if confirmed is None else repr(confirmed.model_id)
        await self._set_model(host, choice, partial(failures.model_refused, choice.model_id, kept))

    async def _set_model(self, host: MspHost, choice: ModelChoice, refusal: Refusal | None) -> None:
        await ask(
            host,
            "session/setModel",
            msp.SessionSetModelParams(
                command_id=new_uuid7(),
                session_id=self._session.session_id,
                model=msp.ModelSelection(model_id=choice.model_id, provider_id=choice.provider_id),
            ),
            msp.CommandAck,
            phase="preparing",
            budget=self._hosting.config.deadlines.submit,
            refusal=refusal,
        )
        self._model_applied = self.confirmed_model = choice


async def _profile_to_replace(environ: Mapping[str, str]) -> UserSettings | None:
    """The user's settings when they save a profile a host must not get (``interactive``), else
    None. Settings that cannot be read or used are left to Muse, which reads them itself: without
    MCP servers to carry, no overlay of them is needed."""
    try:
        user = await read_user_settings(environ)
    except SetupFailure as failure:
        logger.debug("the permission profile was not looked at: %s", failure.message)
        return None
    return user if interactive(user.document) is not None else None


def _auto(settings: SessionSettings) -> bool:
    return MODES[settings.mode_id].automatic == "approve"


def _mode_of(session: msp.Session) -> str | None:
    return None if session.approval_mode is None else session.approval_mode.mode
