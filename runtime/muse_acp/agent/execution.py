"""The execution host of one ACP session: a ``muse serve`` process that runs its turns.

It is started at the session's first prompt, reused by later prompts, and closed when it has
been idle for the configured period, when the session closes, when a mode change needs other
host flags, or when a turn leaves it in an unknown state (a cancel the host never settled).
Attaching resumes a session Muse already knows and starts a new one otherwise; the session id
the adapter minted becomes Muse's own. A host that dies is noticed by the running turn (which
fails with a clear error) and replaced at the next prompt.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

import anyio
from anyio.abc import TaskStatus

from muse_acp.agent.config_options import host_flags
from muse_acp.host.client import HostEnded, MspHost, open_host
from muse_acp.ids import new_uuid7
from muse_acp.msp_types import msp
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp.tasks import wait_first

if TYPE_CHECKING:
    from muse_acp.agent.context import AgentContext
    from muse_acp.agent.session import AcpSession

logger: Final = logging.getLogger("muse_acp.agent")

SESSION_NOT_FOUND: Final = -32020


class ExecutionHost:
    """The host process serving one session's turns (see the module contract)."""

    def __init__(self, ctx: AgentContext, session: AcpSession) -> None:
        self._ctx = ctx
        self._session = session
        self._host: MspHost | None = None
        self._flags: tuple[str, ...] = ()
        self._stop = anyio.Event()
        self._activity = anyio.Event()
        self._in_use = 0
        self._model_applied: object = None

    @property
    def host(self) -> MspHost | None:
        host = self._host
        return host if host is not None and not host.dead.is_set() else None

    def usable_for(self, flags: tuple[str, ...]) -> bool:
        return self.host is not None and not self._stop.is_set() and flags == self._flags

    async def _serve(self, flags: tuple[str, ...], *, task_status: TaskStatus[MspHost]) -> None:
        binary = await self._ctx.muse()
        binary.require_flags(flags)
        started = False
        try:
            async with open_host(
                binary.path,
                cwd=self._session.cwd,
                flags=flags,
                env=self._ctx.environ,
                startup_timeout=self._ctx.config.deadlines.startup,
            ) as host:
                self._host = host
                task_status.started(host)
                started = True
                await self._keep_alive(host)
        except Exception:
            # Before it started, the error belongs to start(); afterwards it must not take
            # the whole agent down with it.
            if not started:
                raise
            logger.exception("execution host of session %s ended", self._session.session_id)
        finally:
            self._host = None

    async def _keep_alive(self, host: MspHost) -> None:
        idle = self._ctx.config.deadlines.idle
        while not self._stop.is_set() and not host.dead.is_set():
            with anyio.move_on_after(idle) as waited:
                await wait_first(self._activity, self._stop, host.dead)
            self._activity = anyio.Event()
            if waited.cancelled_caught and self._in_use == 0:
                logger.debug("closing idle host for session %s", self._session.session_id)
                return

    async def start(self) -> MspHost:
        """Start the process and attach the session (resume or start); runs at most once.

        Raises:
            TimeoutError, ConnectionClosed, RpcError, HostUnavailable: see ``open_host``;
                a host that ends while the session is attached is ``HostEnded`` too.
        """
        self._flags = host_flags(self._session.settings)
        host: MspHost = await self._ctx.tasks.start(self._serve, self._flags)
        try:
            with anyio.fail_after(self._ctx.config.deadlines.startup):
                await self._attach(host)
        except ConnectionClosed:
            self.close()
            # Attaching is still startup; the error needs the exit status and last words.
            await host.process.settle()
            raise HostEnded(*host.exit_summary()) from None
        except BaseException:
            self.close()
            raise
        return host

    async def _attach(self, host: MspHost) -> None:
        session = self._session
        if session.on_host:
            try:
                await host.call(
                    "session/resume",
                    msp.SessionResumeParams(
                        command_id=new_uuid7(), session_id=session.session_id, exclude_items=True
                    ),
                    msp.SessionHistoryResult,
                )
                return
            except RpcError as error:
                if error.code != SESSION_NOT_FOUND:
                    raise
        await host.call(
            "session/start",
            msp.SessionStartParams(
                command_id=new_uuid7(),
                session_id=session.session_id,
                workspace_root=session.cwd,
            ),
            msp.SessionStartResult,
        )
        session.on_host = True

    async def apply_model(self, host: MspHost) -> None:
        """Ask Muse for the session's chosen model when it changed since the last turn."""
        choice = self._session.settings.model
        if choice is None or choice == self._model_applied:
            return
        with anyio.fail_after(self._ctx.config.deadlines.submit):
            await host.call(
                "session/setModel",
                msp.SessionSetModelParams(
                    command_id=new_uuid7(),
                    session_id=self._session.session_id,
                    model=msp.ModelSelection(
                        model_id=choice.model_id, provider_id=choice.provider_id
                    ),
                ),
                msp.CommandAck,
            )
        self._model_applied = choice

    def acquire(self) -> None:
        self._in_use += 1
        self._activity.set()

    def release(self) -> None:
        self._in_use = max(0, self._in_use - 1)
        self._activity.set()

    def close(self) -> None:
        """Ask the host to stop; the process is closed and reaped in the background."""
        self._stop.set()
        self._activity.set()
