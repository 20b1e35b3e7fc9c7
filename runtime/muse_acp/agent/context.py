"""The state one agent connection shares between its handlers.

There is one ``AgentContext`` per ACP connection: the configuration, the ACP connection itself
(for updates and requests to the client), the agent-wide task group that owns long-lived hosts,
what ``initialize`` negotiated, the session registry, and the probed Muse executable.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Final

import anyio
from anyio.abc import TaskGroup

from muse_acp.acp_types import SessionUpdate
from muse_acp.agent.capabilities import Negotiated
from muse_acp.agent.config_options import ModelCatalog
from muse_acp.agent.preferences import PreferenceStore
from muse_acp.agent.session import AcpSession, SessionRegistry
from muse_acp.config import AdapterConfig
from muse_acp.host.binary import MuseBinary, probe, resolve_binary
from muse_acp.host.client import MspHost, open_host
from muse_acp.rpc import Connection
from muse_acp_wire import acp

logger: Final = logging.getLogger("muse_acp.agent")


class AgentContext:
    """Shared state of one agent connection (see the module contract)."""

    def __init__(self, config: AdapterConfig, environ: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.environ: Mapping[str, str] = environ if environ is not None else os.environ
        self.negotiated = Negotiated()
        self.sessions = SessionRegistry()
        self.catalog: ModelCatalog | None = None
        self.preferences = PreferenceStore(config.data_dir)
        self._acp: Connection | None = None
        self._tasks: TaskGroup | None = None
        self._binary: MuseBinary | None = None
        self._binary_lock = anyio.Lock()

    def attach(self, connection: Connection, tasks: TaskGroup) -> None:
        self._acp = connection
        self._tasks = tasks

    @property
    def acp(self) -> Connection:
        assert self._acp is not None, "the agent connection is not running"
        return self._acp

    @property
    def tasks(self) -> TaskGroup:
        assert self._tasks is not None, "the agent connection is not running"
        return self._tasks

    async def muse(self) -> MuseBinary:
        """The configured Muse executable, resolved and probed once per agent.

        Raises:
            HostUnavailable: it is missing or cannot run ``serve``.
        """
        async with self._binary_lock:
            if self._binary is None:
                binary = await probe(resolve_binary(self.config.muse_bin))
                binary.require_serve()
                self._binary = binary
            return self._binary

    async def send_update(self, session: AcpSession, update: SessionUpdate) -> None:
        """Send one ``session/update`` to the client.

        A title in a ``session_info_update`` is replaced by the session's user title when it
        has one, so no host-reported title can override what the user chose.
        """
        if (
            isinstance(update, acp.SessionInfoUpdateSessionUpdate)
            and session.user_title is not None
            and "title" in update.model_fields_set
            and update.title != session.user_title
        ):
            update = update.model_copy(update={"title": session.user_title})
        await self.acp.notify(
            "session/update",
            acp.SessionNotification(session_id=session.session_id, update=update),
        )

    @asynccontextmanager
    async def read_host(self, cwd: str) -> AsyncIterator[MspHost]:
        """A short-lived read-only host (no lease, no flags) for lists, loads and reads."""
        binary = await self.muse()
        async with open_host(
            binary.path,
            cwd=cwd,
            env=self.environ,
            startup_timeout=self.config.deadlines.startup,
        ) as host:
            yield host
