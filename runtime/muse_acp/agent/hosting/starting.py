"""How the agent starts Muse hosts: one place that spawns ``muse serve`` for every keeper.

Contract: ``Hosting`` holds the agent's settings, environment and ``Startup`` (the probed
executable and its launcher) and owns no keeper; ``opener`` returns what starts one host with
the given flags, capabilities and environment (``EnvironmentScope``, lasting exactly as long as
the process) once entered, at most ``MAX_CONCURRENT_STARTS`` at once, each within the startup
budget. Hosts run in the agent's task group (``attach``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Final

import anyio
from anyio.abc import TaskGroup

from muse_acp.agent.handshake.startup import Startup
from muse_acp.config import AdapterConfig
from muse_acp.host.binary import MuseBinary
from muse_acp.host.client import MspHost, open_host
from muse_acp.traces import host_observer

__all__ = ["MAX_CONCURRENT_STARTS", "EnvironmentScope", "HostOpener", "Hosting"]

MAX_CONCURRENT_STARTS: Final = 4
"""Hosts that may be starting (spawned, not yet past their handshake) at the same time."""

HostOpener = Callable[[], AbstractAsyncContextManager[MspHost]]
"""Starts one host process and yields it after its handshake (``AgentContext.open_host``)."""

EnvironmentScope = Callable[[Mapping[str, str]], AbstractAsyncContextManager[Mapping[str, str]]]
"""Makes one host process's environment from the agent's, for as long as the process runs."""


class Hosting:
    """How the agent starts Muse hosts (see the module contract)."""

    def __init__(
        self, config: AdapterConfig, environ: Mapping[str, str], startup: Startup | None = None
    ) -> None:
        self.config = config
        self.environ = environ
        self.startup = startup or Startup(config, environ)
        self._tasks: TaskGroup | None = None
        self._starts = anyio.Semaphore(MAX_CONCURRENT_STARTS)

    def attach(self, tasks: TaskGroup) -> None:
        """Run hosts in ``tasks`` (the agent's task group) from now on."""
        self._tasks = tasks

    @property
    def tasks(self) -> TaskGroup:
        assert self._tasks is not None, "hosts are started only while the agent runs"
        return self._tasks

    @property
    def probed(self) -> MuseBinary | None:
        """The configured Muse executable once probed (see ``Startup.probed``)."""
        return self.startup.probed

    async def muse(self) -> MuseBinary:
        """The configured Muse executable, probed once (see ``Startup.muse``).

        Raises:
            HostUnavailable: it is missing or cannot be probed.
        """
        return await self.startup.muse()

    def opener(
        self,
        cwd: str,
        flags: tuple[str, ...] = (),
        *,
        experimental: bool = False,
        requested: tuple[str, ...] = (),
        environment: EnvironmentScope | None = None,
    ) -> HostOpener:
        """Start ``muse serve`` with ``flags`` in ``cwd`` when the returned opener is entered;
        ``experimental`` opts its connection in to Muse's experimental methods, ``requested``
        asks for capabilities at its ``initialize``, ``environment`` makes its environment."""
        return partial(self._open, cwd, flags, experimental, requested, environment)

    @asynccontextmanager
    async def _open(
        self,
        cwd: str,
        flags: tuple[str, ...],
        experimental: bool,
        requested: tuple[str, ...],
        environment: EnvironmentScope | None,
    ) -> AsyncIterator[MspHost]:
        binary = await self.muse()
        binary.require_serve()
        binary.require_flags(flags)
        startup = self.config.deadlines.startup
        async with AsyncExitStack() as stack:
            # Entered first, so it is left only after the process below was reaped.
            env = (
                self.environ
                if environment is None
                else await stack.enter_async_context(environment(self.environ))
            )
            # Starting a host is CPU-bound; a few at a time keeps the first ones fast and every
            # one within the startup budget when many sessions open together.
            with anyio.fail_after(startup):
                await self._starts.acquire()
            tracer = self.startup.tracer
            try:
                host = await stack.enter_async_context(
                    open_host(
                        binary.path,
                        cwd=cwd,
                        flags=flags,
                        env=env,
                        startup_timeout=startup,
                        experimental=experimental,
                        requested=requested,
                        trust_newer=self.config.trust_newer_host,
                        launcher=self.startup.launcher,
                        on_frame=host_observer(tracer, [binary.path, "serve", *flags], cwd),
                    )
                )
            finally:
                self._starts.release()
            if tracer is not None:
                tracer.features(host.features)
            yield host
