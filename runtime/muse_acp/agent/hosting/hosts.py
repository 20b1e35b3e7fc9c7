"""Host processes kept for the agent's work, and the one mapping of a failed host call.

Contract: a ``HostKeeper`` keeps at most one ``muse serve`` process for one purpose (a session's
execution or read host, the catalog host): ``start`` waits (at most ``PROCESS_EXIT_BUDGET``) until
its previous process and that of the keeper it follows (``after``) are reaped, so no two race
for Muse's session lease; ``holding`` (one use of a host), ``occupied`` (its owner's work, which
may start and prepare a host for longer than ``idle``) and ``busy`` (work Muse runs on the host
by itself, while it says so) keep the idle timer off it; it closes after ``idle`` seconds
otherwise, on ``close``, or when it dies, and then ``ended`` is called. Its ``environment``
lasts exactly as long as each process. ``Hosting`` starts hosts (``opener``, at most
``MAX_CONCURRENT_STARTS`` at once) and owns no keeper. ``ask`` sends one MSP request within a
budget and maps every failure to the ACP failure of the caller's phase: ``deadlineExceeded``,
``hostExited`` or ``hostRejected`` (or the caller's ``refusal``). Every host call of the agent
goes through ``ask`` or ``asking``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import (
    AbstractAsyncContextManager,
    AsyncExitStack,
    asynccontextmanager,
)
from functools import partial
from typing import Final, TypeVar

import anyio
from anyio.abc import TaskGroup, TaskStatus

from muse_acp.agent.errors import failures
from muse_acp.agent.handshake.startup import Startup
from muse_acp.children import EXIT_GRACE, SETTLE_TIMEOUT, TERMINATE_GRACE
from muse_acp.config import AdapterConfig
from muse_acp.host.binary import HostUnavailable, MuseBinary
from muse_acp.host.client import HostEnded, MspHost, open_host
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp.tasks import wait_first
from muse_acp.traces import host_observer
from muse_acp_wire._base import WireModel

__all__ = [
    "MAX_CONCURRENT_STARTS",
    "PROCESS_EXIT_BUDGET",
    "EnvironmentScope",
    "HostKeeper",
    "HostOpener",
    "Hosting",
    "Refusal",
    "SetupFailure",
    "ask",
    "asking",
]

logger: Final = logging.getLogger("muse_acp.agent")

R = TypeVar("R", bound=WireModel)

HostOpener = Callable[[], AbstractAsyncContextManager[MspHost]]
"""Starts one host process and yields it after its handshake (``AgentContext.open_host``)."""

Refusal = Callable[[RpcError], "RpcError | None"]
"""Maps a host's error to the caller's own error, or None for the generic refusal."""

EnvironmentScope = Callable[[Mapping[str, str]], AbstractAsyncContextManager[Mapping[str, str]]]
"""Makes one host process's environment from the agent's, for as long as the process runs."""


class SetupFailure(RpcError):
    """The adapter could not prepare what a host needs before it starts (its environment);
    the error already says what to do and is passed to the caller as it is."""


MAX_CONCURRENT_STARTS: Final = 4
"""Hosts that may be starting (spawned, not yet past their handshake) at the same time."""
PROCESS_EXIT_BUDGET: Final = EXIT_GRACE + TERMINATE_GRACE + SETTLE_TIMEOUT + 1.0
"""Seconds a closing host may take to be reaped before its successor starts anyway."""


@asynccontextmanager
async def asking(
    host: MspHost,
    method: str,
    *,
    phase: failures.Phase,
    budget: float,
    refusal: Refusal | None = None,
) -> AsyncIterator[None]:
    """The budget and the failure mapping of ``ask`` for one call of ``method`` in the block."""
    try:
        with anyio.fail_after(budget):
            yield
    except TimeoutError:
        raise failures.deadline_exceeded(phase, budget) from None
    except ConnectionClosed:
        code, stderr_tail = await host.ended()
        raise failures.host_exited(phase, code, stderr_tail) from None
    except RpcError as error:
        mapped = refusal(error) if refusal is not None else None
        raise (mapped or failures.host_rejected(method, error, phase)) from None


async def ask(
    host: MspHost,
    method: str,
    params: WireModel | None,
    result_type: type[R],
    *,
    phase: failures.Phase,
    budget: float,
    refusal: Refusal | None = None,
) -> R:
    """Send ``method`` to ``host`` and return its parsed result (see the module contract).

    Raises:
        RpcError: the ACP failure for the phase, or what ``refusal`` made of a host error.
    """
    async with asking(host, method, phase=phase, budget=budget, refusal=refusal):
        result = await host.call(method, params, result_type)
    return result


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


class HostKeeper:
    """At most one host process at a time for one purpose (see the module contract)."""

    def __init__(
        self,
        name: str,
        hosting: Hosting,
        *,
        idle: float,
        after: HostKeeper | None = None,
        experimental: bool = False,
    ) -> None:
        self.name = name
        self._hosting = hosting
        self._experimental = experimental
        self.requested: tuple[str, ...] = ()
        """Capabilities the next host this keeper starts asks for at ``initialize``."""
        self.environment: EnvironmentScope | None = None
        """Makes the environment of the next host this keeper starts (None: the agent's)."""
        self._idle = idle
        self._after = after
        self._host: MspHost | None = None
        self._gone = anyio.Event()
        self._gone.set()
        self._stop = anyio.Event()
        self._activity = anyio.Event()
        self._users = 0
        self._starting = anyio.Lock()
        self.busy: Callable[[], bool] = lambda: False
        """True while the host runs work of its own that must not be idled out under it."""
        self.ended: Callable[[], None] = lambda: None
        """Called once a host of this keeper is gone (what ran on it is gone too)."""

    @property
    def host(self) -> MspHost | None:
        """The running host, while it is alive and not asked to stop."""
        host = self._host
        if host is None or host.dead.is_set() or self._stop.is_set():
            return None
        return host

    async def obtain(self, cwd: str, flags: tuple[str, ...] = ()) -> MspHost:
        """The running host, or a new one; callers that come together share one start.

        Raises:
            RpcError: as ``start``.
        """
        async with self._starting:
            return self.host or await self._start(cwd, flags)

    async def start(self, cwd: str, flags: tuple[str, ...] = ()) -> MspHost:
        """Start a new host in place of the running one (once that one is gone); return it
        after its handshake.

        Raises:
            RpcError: ``HostUnavailable`` when the executable cannot be used, else an ACP
                failure of the ``starting`` phase (nothing was submitted).
        """
        async with self._starting:
            return await self._start(cwd, flags)

    async def _start(self, cwd: str, flags: tuple[str, ...]) -> MspHost:
        self.close()
        with anyio.move_on_after(PROCESS_EXIT_BUDGET) as waited:
            await self.wait_gone()
            if self._after is not None:
                await self._after.wait_gone()
        if waited.cancelled_caught:
            logger.warning("%s: the previous host was not reaped in time", self.name)
        self._after = None
        self._stop = anyio.Event()
        hosting = self._hosting
        startup = hosting.config.deadlines.startup
        try:
            opener = hosting.opener(
                cwd,
                flags,
                experimental=self._experimental,
                requested=self.requested,
                environment=self.environment,
            )
            host: MspHost = await hosting.tasks.start(self._serve, opener)
        except TimeoutError:
            raise failures.deadline_exceeded("starting", startup) from None
        except HostEnded as ended:
            raise failures.host_exited("starting", ended.exit_code, ended.stderr_tail) from None
        except ConnectionClosed:
            raise failures.host_exited("starting", None, "") from None
        except (HostUnavailable, SetupFailure):
            raise
        except RpcError as error:
            raise failures.host_rejected("initialize", error, "starting") from None
        except OSError as error:  # running the executable, or entering the workspace
            raise failures.start_failed(cwd, error) from None
        return host

    async def wait_gone(self) -> None:
        """Return once no process of this keeper runs (unbounded: callers bound it)."""
        await self._gone.wait()

    async def wait_clear(self) -> None:
        """``wait_gone``, and also for the process of the keeper this one follows (``after``)
        while this one has not started yet: then nothing of this purpose holds a lease."""
        await self.wait_gone()
        if self._after is not None:
            await self._after.wait_gone()

    @asynccontextmanager
    async def holding(self, host: MspHost) -> AsyncIterator[MspHost]:
        """Mark ``host`` in use for the block, so the idle timer leaves it running."""
        self.occupied(True)
        try:
            yield host
        finally:
            self.occupied(False)

    def occupied(self, began: bool) -> None:
        """Work of the keeper's owner ``began`` or ended: while any runs, the idle timer
        leaves the host alone, the one running and the one it starts and prepares."""
        self._users += 1 if began else -1
        self._activity.set()

    @asynccontextmanager
    async def reading(self, cwd: str, budget: float) -> AsyncIterator[MspHost]:
        """The running host (started in ``cwd`` when there is none), held for the block, with
        ``budget`` seconds for everything the block does with it. A host that ran out of time
        or went away is closed, since its state is unknown.

        Raises:
            RpcError: an ACP failure of the ``starting`` phase, or ``deadlineExceeded`` of the
                ``reading`` phase, or what the block raised.
        """
        host = await self.obtain(cwd)
        try:
            async with self.holding(host):
                with anyio.fail_after(budget):
                    yield host
        except TimeoutError:
            self.close()
            raise failures.deadline_exceeded("reading", budget) from None
        except RpcError:
            if host.dead.is_set():
                self.close()
            raise

    def close(self) -> None:
        """Ask the running host to stop; it is closed and reaped in the background."""
        self._stop.set()
        self._activity.set()

    async def _serve(self, opener: HostOpener, *, task_status: TaskStatus[MspHost]) -> None:
        gone = self._gone = anyio.Event()
        stop = self._stop
        started = False
        try:
            async with opener() as host:
                self._host = host
                task_status.started(host)
                started = True
                await self._keep(host, stop)
        except Exception:
            # Before it started, the error belongs to start(); afterwards the work that used
            # the host reported what it saw, and the keeper must not take the agent down.
            if not started:
                raise
            logger.debug("%s: host ended", self.name, exc_info=True)
        finally:
            self._host = None
            self.ended()
            gone.set()

    async def _keep(self, host: MspHost, stop: anyio.Event) -> None:
        while not stop.is_set() and not host.dead.is_set():
            with anyio.move_on_after(self._idle) as waited:
                await wait_first(self._activity, stop, host.dead)
            self._activity = anyio.Event()
            if waited.cancelled_caught and self._users == 0 and not self.busy():
                logger.debug("%s: closing the idle host", self.name)
                stop.set()  # from now on nobody is handed this host
                return
