"""The state one agent connection shares between its handlers.

There is one ``AgentContext`` per ACP connection: the configuration, the ACP connection itself
(for updates and requests to the client), what ``initialize`` negotiated, the session registry,
the adapter's own preference store and the tombstones of sessions it deleted, the model
catalog last read from Muse (or remembered of it, ``stale`` until a host lists it again), the
credential Muse last reported (``account``, asked once, see ``readiness``), how hosts are
started (``hosting``) and the agent's catalog host: a lease-free host kept for listing and
reading sessions, so that paging through ``session/list`` or loading several sessions does not
start a process per request. Work that leaves a session
held by the host it ran on (a fork) gets a one-off host instead, which the new session's
execution host waits to see gone. The backend (MSP, or the legacy exec; see
``muse_acp.host.backends``) is chosen once, at ``initialize`` or first use, and kept for the
connection (``backend``). Per-session state lives in each ``AcpSession``, never here.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import TaskGroup

from muse_acp.agent.handshake.capabilities import Negotiated
from muse_acp.agent.handshake.startup import Startup
from muse_acp.agent.hosting.exec_runs import sweep as sweep_exec_runs
from muse_acp.agent.hosting.hosts import HostKeeper
from muse_acp.agent.hosting.mcp_overlay import overlay_root, sweep
from muse_acp.agent.hosting.private_files import off_loop
from muse_acp.agent.hosting.skills import SkillsCatalog
from muse_acp.agent.hosting.starting import Hosting
from muse_acp.agent.options.config_options import ModelCatalog, SessionSettings
from muse_acp.agent.options.preferences import PreferenceStore
from muse_acp.agent.options.safety import offered_controls
from muse_acp.agent.sessions.session import AcpSession, SessionRegistry
from muse_acp.agent.sessions.tombstones import Tombstones
from muse_acp.agent.turns.turn import TurnOptions
from muse_acp.config import AdapterConfig
from muse_acp.host.backends import BackendChoice
from muse_acp.host.binary import HostUnavailable
from muse_acp.host.client import MspHost
from muse_acp.rpc import Connection
from muse_acp_wire import msp

__all__ = ["CATALOG_HOST_IDLE", "SWEEP_BUDGET", "AccountCheck", "AgentContext"]

CATALOG_HOST_IDLE: Final = 30.0
"""Seconds the catalog host stays up after its last use (less when the configured idle
period is shorter)."""
SWEEP_BUDGET: Final = 30.0
"""Seconds the start-up sweep of what ended muse-acp processes left may take."""

logger: Final = logging.getLogger("muse_acp.agent")


async def _sweep_left_behind(data_dir: Path) -> None:
    """Remove what muse-acp processes that ended left under ``data_dir`` (``mcp_overlay.sweep``,
    ``exec_runs.sweep``) in a worker thread, given up after ``SWEEP_BUDGET`` seconds."""

    def both() -> None:
        sweep(overlay_root(data_dir))
        sweep_exec_runs(data_dir)

    try:
        await off_loop(both, SWEEP_BUDGET)
    except TimeoutError:
        logger.warning(
            "could not sweep what ended muse-acp processes left under %s within %gs "
            "(its file system does not answer)",
            data_dir,
            SWEEP_BUDGET,
        )


@dataclass(frozen=True, slots=True)
class AccountCheck:
    """What Muse said of its credential: ``state``, or None for a Muse that cannot say."""

    state: msp.AccountState | None

    @property
    def signed_out(self) -> bool:
        """Muse has no credential and needs one."""
        state = self.state
        return state is not None and state.credential_required and state.state == "loggedOut"


class AgentContext:
    """Shared state of one agent connection (see the module contract)."""

    def __init__(
        self,
        config: AdapterConfig,
        environ: Mapping[str, str] | None = None,
        startup: Startup | None = None,
    ) -> None:
        self.startup = startup or Startup(config, environ)
        self.config = config
        self.environ = self.startup.environ
        self.sessions = SessionRegistry()
        self.catalog: ModelCatalog | None = None
        self.catalog_stale = False
        """The catalog was remembered from an earlier start: a host has not listed it since."""
        self.catalog_reading: anyio.Event | None = None
        """Set when the reads of the catalog under way have all ended; None when none is (owned
        by ``catalog.reading_catalog``)."""
        self.catalog_readers = 0
        """How many reads of the catalog are under way (owned by ``catalog.reading_catalog``)."""
        self.account: AccountCheck | None = None
        """What Muse last said of its credential (None: not asked yet, or asked in vain)."""
        self.asking_muse = anyio.Lock()
        """Held while a session's first needs are asked of Muse (``readiness``), so sessions
        opened at once share one check."""
        self.preferences = PreferenceStore(config.data_dir)
        self.tombstones = Tombstones(self.preferences)
        self.hosting = Hosting(config, self.environ, self.startup)
        self.skills = SkillsCatalog(self.hosting)
        idle = min(CATALOG_HOST_IDLE, config.deadlines.idle)
        self._catalog_host = HostKeeper("catalog host", self.hosting, idle=idle)
        self._catalog_cwd: str | None = None
        self._acp: Connection | None = None

    def attach(self, connection: Connection, tasks: TaskGroup) -> None:
        self._acp = connection
        self.hosting.attach(tasks)
        # A muse-acp that crashed left its hosts' settings overlays (MCP secrets) behind, and
        # maybe exec runs still going, with their staged images. Swept in the background, off
        # the event loop: a data directory that does not answer must stall no request.
        tasks.start_soon(_sweep_left_behind, self.config.data_dir)

    @property
    def acp(self) -> Connection:
        assert self._acp is not None, "the agent connection is not running"
        return self._acp

    @property
    def negotiated(self) -> Negotiated:
        """What ``initialize`` negotiated (kept by ``startup``)."""
        return self.startup.negotiated

    @negotiated.setter
    def negotiated(self, negotiated: Negotiated) -> None:
        self.startup.negotiated = negotiated

    async def backend(self) -> BackendChoice:
        """The backend serving this connection, chosen once and kept (see ``Startup.backend``).

        Raises:
            HostUnavailable: the executable is missing, or cannot run the backend asked for.
        """
        return await self.startup.backend()

    def exec_known(self) -> bool | None:
        """``on_exec`` when it needs no wait; None when it would wait for the backend's choice."""
        if self.config.backend != "auto":
            return self.config.backend == "exec"
        chosen = self.startup.chosen
        return None if chosen is None else chosen.exec

    async def on_exec(self) -> bool:
        """True when the exec backend serves this connection. An executable that cannot be used
        yet counts as MSP unless exec was asked for: the MSP path then reports what is wrong."""
        known = self.exec_known()
        if known is not None:
            return known
        try:
            return (await self.backend()).exec
        except HostUnavailable:
            return False

    @property
    def turn_options(self) -> TurnOptions:
        return TurnOptions(
            deadlines=self.config.deadlines,
            forms=self.negotiated.elicitation_form,
            announce_active_turn=self.negotiated.any_steering,
        )

    def new_session(
        self,
        session_id: str,
        cwd: str,
        *,
        settings: SessionSettings | None = None,
        on_host: bool = False,
        host_title: str | None = None,
        user_title: str | None = None,
        after: HostKeeper | None = None,
    ) -> AcpSession:
        """Register a session, in place of any earlier one of the same id (which is closed).
        Its execution host starts only once the earlier session's is gone, or ``after``'s."""
        previous = self.sessions.get(session_id)
        if previous is not None:
            previous.close()
            after = previous.execution.keeper
        return self.sessions.add(
            AcpSession(
                session_id,
                cwd,
                client=self.acp,
                hosting=self.hosting,
                settings=self._offered(settings or SessionSettings()),
                on_host=on_host,
                host_title=host_title,
                user_title=user_title,
                after=after,
                notices=self.negotiated.notices,
                compaction=self.negotiated.compaction,
                plans=self.negotiated.plans,
                subagents=self.negotiated.subagents,
            )
        )

    def _offered(self, settings: SessionSettings) -> SessionSettings:
        """``settings`` with the safety options the installed Muse offers (none when it was
        not probed yet or could not be); choices it cannot apply are held (``safety``)."""
        binary = self.hosting.probed
        offer = frozenset[str]()
        # The exec backend runs no ``muse serve``, so the serve flags would never apply.
        on_exec = self.startup.chosen is not None and self.startup.chosen.exec
        if binary is not None and not on_exec:
            offer = offered_controls(binary.serve_flags, self.startup.expected(binary))
        return replace(settings, safety=settings.safety.offered_to(offer))

    @asynccontextmanager
    async def catalog_host(self, cwd: str) -> AsyncIterator[MspHost]:
        """The kept lease-free host for lists and loads, with the read budget over the block
        (see ``HostKeeper.reading``)."""
        # The host's directory matters to no read it serves; the first caller's will do.
        self._catalog_cwd = self._catalog_cwd or cwd
        async with self._catalog_host.reading(
            self._catalog_cwd, self.config.deadlines.read
        ) as host:
            yield host

    @asynccontextmanager
    async def one_off_host(self, cwd: str) -> AsyncIterator[tuple[MspHost, HostKeeper]]:
        """A host of its own for work that leaves a session on the host it ran on (a fork):
        it is closed after the block, and its keeper says when it is gone."""
        keeper = HostKeeper("one-off host", self.hosting, idle=self.config.deadlines.read)
        try:
            async with keeper.reading(cwd, self.config.deadlines.read) as host:
                yield host, keeper
        finally:
            keeper.close()

    def close_catalog_host(self) -> None:
        self._catalog_host.close()
