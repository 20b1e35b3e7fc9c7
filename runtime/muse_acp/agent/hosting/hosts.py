"""Host processes kept for the agent's work, and the one mapping of a failed host call.

Contract: a ``HostKeeper`` keeps at most one ``muse serve`` process for one purpose (a session's
execution or read host, the catalog host): ``start`` waits (at most ``PROCESS_EXIT_BUDGET``) until
its previous process and that of the keeper it follows (``after``) are reaped, so no two race
for Muse's session lease; ``holding`` (one use of a host), ``occupied`` (its owner's work, which
may start and prepare a host for longer than ``idle``) and ``busy`` (work Muse runs on the host
by itself, while it says so) keep the idle timer off it; it closes after ``idle`` seconds
otherwise, on ``close``, or when it dies, and then ``ended`` is called. Its ``environment``
lasts exactly as long as each process; ``starting.Hosting`` starts them. ``ask`` sends one MSP
request within a budget and maps every failure to the ACP failure of the caller's phase:
``deadlineExceeded``, ``hostExited`` or ``hostRejected`` (or the caller's ``refusal``). Every
host call of the agent goes through ``ask`` or ``asking``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import (
    asynccontextmanager,
)
from types import TracebackType
from typing import Final, TypeVar

import anyio
from anyio.abc import TaskStatus

from muse_acp.agent.errors import failures
from muse_acp.agent.hosting.starting import EnvironmentScope, Hosting, HostOpener
from muse_acp.children import EXIT_GRACE, SETTLE_TIMEOUT, TERMINATE_GRACE
from muse_acp.host.binary import HostUnavailable
from muse_acp.host.client import HostEnded, MspHost
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp_wire._base import WireModel

__all__ = [
    "PROCESS_EXIT_BUDGET",
    "HostKeeper",
    "Refusal",
    "SetupFailure",
    "ask",
    "asking",
]

logger: Final = logging.getLogger("muse_acp.agent")

R = TypeVar("R", bound=WireModel)


Refusal = Callable[[RpcError], "RpcError | None"]
"""Maps a host's error to the caller's own error, or None for the generic refusal."""


class SetupFailure(RpcError):
    """The adapter could not prepare what a host needs before it starts (its environment);
    the error already says what to do and is passed to the caller as it is."""


PROCESS_EXIT_BUDGET: Final = EXIT_GRACE + TERMINATE_GRACE + SETTLE_TIMEOUT + 1.0
"""Seconds a closing host may take to be reaped before its successor starts anyway."""


class asking:  # a context manager, named for the call it is written as
    """The budget and the failure mapping of ``ask`` for one call of ``method`` in the block.

    A class rather than a generator: a prompt's ``turn/start`` is written in one, and this
    costs it one object and one cancel scope.
    """

    __slots__ = ("_budget", "_host", "_method", "_phase", "_refusal", "_scope")

    def __init__(
        self,
        host: MspHost,
        method: str,
        *,
        phase: failures.Phase,
        budget: float,
        refusal: Refusal | None = None,
    ) -> None:
        self._host, self._method, self._phase = host, method, phase
        self._budget, self._refusal = budget, refusal
        self._scope: anyio.CancelScope | None = None

    async def __aenter__(self) -> None:
        self._scope = anyio.CancelScope(deadline=anyio.current_time() + self._budget)
        self._scope.__enter__()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        scope = self._scope
        assert scope is not None, "left before it was entered"
        swallowed = scope.__exit__(kind, error, traceback)
        # As ``anyio.fail_after``: the block ran out of time when the scope's own deadline
        # cancelled it (a timeout within the block counts too).
        if scope.cancelled_caught and anyio.current_time() >= scope.deadline:
            raise failures.deadline_exceeded(self._phase, self._budget) from None
        if swallowed:
            return True
        if isinstance(error, TimeoutError):
            raise failures.deadline_exceeded(self._phase, self._budget) from None
        if isinstance(error, ConnectionClosed):
            code, stderr_tail = await self._host.ended()
            raise failures.host_exited(self._phase, code, stderr_tail) from None
        if isinstance(error, RpcError):
            mapped = self._refusal(error) if self._refusal is not None else None
            raise (mapped or failures.host_rejected(self._method, error, self._phase)) from None
        return False


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
        # Whatever sets ``stop`` also sets ``_activity`` (``close``), and one waiter turns the
        # host's death into activity for its whole life: a wake-up, at every use's start and
        # end, then costs no task group of its own.
        async with anyio.create_task_group() as watching:
            watching.start_soon(self._wake_on_death, host)
            while not stop.is_set() and not host.dead.is_set():
                with anyio.move_on_after(self._idle) as waited:
                    await self._activity.wait()
                self._activity = anyio.Event()
                if waited.cancelled_caught and self._users == 0 and not self.busy():
                    logger.debug("%s: closing the idle host", self.name)
                    stop.set()  # from now on nobody is handed this host
                    break
            watching.cancel_scope.cancel()

    async def _wake_on_death(self, host: MspHost) -> None:
        await host.dead.wait()
        self._activity.set()
