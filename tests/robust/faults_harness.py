"""Helpers for muse-acp's host-fault and load tests: armed faults, short budgets, outcomes.

A ``FaultWorld`` is the wire tests' isolated ``World`` whose hosts can be given faults: ``arm``
hands a ``MUSE_SIM_FAULTS`` value to exactly one host, the first ``serve`` started after it.
Every other host runs with the world's own environment, so one agent can meet a fault and then
load the same session through a healthy host. By default the agent and its hosts run in this
process (``SimLauncher`` takes the armed faults and lists the hosts it served); with
``process`` they are processes, and the world's ``muse`` is a small wrapper around muse-sim
that appends the pid of every process it starts to a file (``exec`` keeps the pid, so it is the
simulator's own) and hands the armed faults over: for claims about processes (reaping, kills).

``Budgets`` sets the adapter's deadlines short, so a hang shows up in seconds; ``settled_error``
times an operation that must fail, and a ``Fault`` says which error and which timing it must
fail with. ``prepared`` yields an agent whose session has one durable turn and no host left
running, and ``loads_with_history`` checks that this turn survives whatever happened since.
Nothing signals that a process is gone from ``/proc`` (``procs``), so waiting for hosts to go
is a poll with a deadline (``wait_until``).
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import acp
import anyio
import pytest
from acp import schema

from muse_acp.sim.in_process import SimLauncher
from muse_acp.sim.launcher import write_launcher
from tests.agent_wire.harness import WAIT, Agent, World, failure_of, make_world, running_agent

from .procs import cmdline, is_running
from .rawagent import RawAgent, raw_agent

__all__ = [
    "DEADLINE",
    "EXITED",
    "FIRST",
    "INTERNAL_ERROR",
    "IN_PROCESS",
    "MARGIN",
    "POLL",
    "Budget",
    "Budgets",
    "Fault",
    "FaultWorld",
    "Settled",
    "Stopwatch",
    "announced_turn",
    "fault_world",
    "host_saw",
    "loads_with_history",
    "prepared",
    "read_budget",
    "settled_error",
    "startup_budget",
    "submit_budget",
    "wait_until",
]

MARGIN: Final = 4.0
"""Seconds of slack on top of a configured budget before an elapsed time counts as a hang:
room for a loaded two-core machine to start Python processes, never for a missed deadline."""
POLL: Final = 0.05
"""Seconds between two looks at ``/proc`` (or a capture file) while waiting for a change."""
ACTIVE_TURN: Final = "muse/activeTurnId"


@dataclass(frozen=True, slots=True)
class Budgets:
    """The adapter's deadlines in seconds (``MUSE_ACP_*_TIMEOUT``), short for tests."""

    startup: float = 8.0
    submit: float = 2.0
    cancel: float = 1.0
    read: float = 5.0
    idle: float = 1.0

    def env(self) -> dict[str, str]:
        return {
            "MUSE_ACP_STARTUP_TIMEOUT": f"{self.startup:g}",
            "MUSE_ACP_SUBMIT_TIMEOUT": f"{self.submit:g}",
            "MUSE_ACP_CANCEL_TIMEOUT": f"{self.cancel:g}",
            "MUSE_ACP_READ_TIMEOUT": f"{self.read:g}",
            "MUSE_ACP_IDLE_TIMEOUT": f"{self.idle:g}",
        }


IN_PROCESS: Final = Budgets(startup=3.0, read=2.0, idle=0.5)
"""The budgets of a world whose hosts are played in process: a host starts there without a
Python process (milliseconds), so a hang is given up on and an idle host closed sooner; still
tens of times what a start or a read takes with six test workers on two cores."""


# ``mv`` is atomic: of hosts starting together, exactly one takes the armed faults.
_PRELUDE: Final = """echo $$ >> {pids}
if [ "$1" = serve ] && mv {armed} {fired}.$$ 2>/dev/null; then
    MUSE_SIM_FAULTS=$(cat {fired}.$$)
    export MUSE_SIM_FAULTS
fi
"""
_FIRED: Final = "fired-faults"


@dataclass
class FaultWorld:
    """A ``World`` whose simulated hosts are seen and can be given faults one at a time: in
    process (``launcher`` plays them and takes armed faults) or, with ``launcher`` None, as
    muse-sim processes a wrapper records (for claims about processes: reaping, kills)."""

    world: World
    budgets: Budgets
    launcher: SimLauncher | None
    pid_file: Path
    armed: Path

    @property
    def process(self) -> bool:
        """The agent and its hosts run as processes."""
        return self.launcher is None

    def agent(
        self, capabilities: schema.ClientCapabilities | None = None
    ) -> AbstractAsyncContextManager[Agent]:
        """``running_agent`` for this world, in its tier."""
        return running_agent(
            self.world, capabilities=capabilities, process=self.process, launcher=self.launcher
        )

    def raw_agent(
        self, env: Mapping[str, str] | None = None
    ) -> AbstractAsyncContextManager[RawAgent]:
        """``raw_agent`` for this world (plus ``env``), in its tier."""
        return raw_agent(self.world, env, process=self.process, launcher=self.launcher)

    def arm(self, faults: str) -> None:
        """Give ``faults`` (a ``MUSE_SIM_FAULTS`` value) to the next host that starts serving."""
        if self.launcher is not None:
            self.launcher.arm(faults)
            return
        staged = self.armed.with_suffix(".staged")
        staged.write_text(faults)
        staged.replace(self.armed)  # the wrapper must never read half a fault list

    @property
    def fired(self) -> bool:
        """A host took the armed faults."""
        if self.launcher is not None:
            return self.launcher.armed is None
        return not self.armed.exists()

    def faulted(self) -> list[int]:
        """The pids of the hosts that took armed faults (processes only)."""
        assert self.process, "in process, hosts have no pids of their own"
        return [int(path.suffix[1:]) for path in self.armed.parent.glob(f"{_FIRED}.*")]

    def pids(self) -> list[int]:
        """Every muse-sim process started so far (hosts, version probes, other commands)."""
        assert self.process, "in process, hosts have no pids of their own"
        if not self.pid_file.exists():
            return []
        return [int(line) for line in self.pid_file.read_text().split()]

    def running(self) -> list[int]:
        return [pid for pid in self.pids() if is_running(pid)]

    def left(self, faulted: bool = False) -> list[str]:
        """The hosts still there (only those that took armed faults, with ``faulted``): muse-sim
        processes not yet exited and reaped, or in process hosts the agent still holds."""
        if self.launcher is None:
            pids = self.faulted() if faulted else self.running()
            return [f"{pid}: {cmdline(pid)}" for pid in pids if is_running(pid)]
        return [
            f"host {number} (faults {served.armed})"
            for number, served in enumerate(self.launcher.served)
            if served.held and (served.armed is not None or not faulted)
        ]

    async def all_exited(self, within: float) -> None:
        """Wait until every host is gone (see ``left``)."""
        await wait_until(lambda: not self.left(), within, self.describe)

    def describe(self) -> str:
        """What is still running, and the end of the agent's log, for a failure message."""
        return f"muse-sim hosts still present: {self.left()}\n{self.world.stderr_text()[-3000:]}"


def fault_world(
    root: Path, budgets: Budgets | None = None, version: str = "1.2.1", *, process: bool = False
) -> FaultWorld:
    """A fresh isolated world under ``root``, in process or (``process``) with a ``muse`` that
    records pids and takes armed faults; ``budgets`` default to the tier's."""
    budgets = budgets or (Budgets() if process else IN_PROCESS)
    world = make_world(root, version)
    pid_file = root / "sim-pids"
    armed = root / "armed-faults"
    if process:
        prelude = _PRELUDE.format(
            pids=shlex.quote(str(pid_file)),
            armed=shlex.quote(str(armed)),
            fired=shlex.quote(str(root / _FIRED)),
        )
        write_launcher(world.muse_bin, prelude=prelude)
    world.extra_env.update(budgets.env())
    if process:
        # The level a user runs at: what these tests call alarming in a log is judged there.
        world.extra_env["MUSE_ACP_LOG"] = "info"
    launcher = None if process else SimLauncher()
    return FaultWorld(world, budgets, launcher, pid_file, armed)


# -- outcomes and time ---------------------------------------------------------------------


class Stopwatch:
    """Measures the monotonic time since it was made."""

    def __init__(self) -> None:
        self._began = anyio.current_time()

    @property
    def elapsed(self) -> float:
        return anyio.current_time() - self._began


@dataclass
class Settled:
    """The ACP error an operation ended with and how long it took (set when its block ends)."""

    error: acp.RequestError | None = None
    elapsed: float = 0.0

    @property
    def raised(self) -> acp.RequestError:
        assert self.error is not None, "the operation has not settled"
        return self.error

    @property
    def failure(self) -> dict[str, Any] | None:
        """``data.failure`` of the error, when it has one."""
        data = self.raised.data
        return failure_of(self.raised) if isinstance(data, dict) and "failure" in data else None


@contextmanager
def settled_error(within: float) -> Iterator[Settled]:
    """Expect the body to raise an ACP error within ``within`` seconds; record it and the time."""
    settled = Settled()
    watch = Stopwatch()
    with pytest.raises(acp.RequestError) as raised, anyio.fail_after(within):
        yield settled
    settled.error = raised.value
    settled.elapsed = watch.elapsed


async def announced_turn(agent: Agent, session: str, seen: int) -> str:
    """The turn id of the first running-turn announcement (``muse/activeTurnId``, steering
    negotiated) after the first ``seen`` ``session_info_update`` of ``session``."""
    count = seen + 1
    while True:
        update = await agent.client.wait_for(session, "session_info_update", count)
        turn = (update.field_meta or {}).get(ACTIVE_TURN)
        if isinstance(turn, str):
            return turn
        count += 1


async def wait_until(
    condition: Callable[[], bool],
    within: float,
    explain: Callable[[], str] = lambda: "the condition never held",
) -> None:
    """Poll ``condition()`` until it holds; fail with ``explain()`` after ``within`` seconds."""
    with anyio.move_on_after(within):
        while not condition():  # noqa: ASYNC110  # nothing signals a change in /proc
            await anyio.sleep(POLL)
        return
    raise AssertionError(f"not within {within:g}s: {explain()}")


# -- a prepared agent and the faults it meets ---------------------------------------------


FIRST: Final = "the durable first words"
"""The first prompt of every test; its turn completed, so every fault must leave it loadable."""
INTERNAL_ERROR: Final = -32603
"""The code of every failure of a turn, a read or a load."""
EXITED: Final = ("exit code 1", "again; muse-acp starts a new Muse host")
"""What a host-death error must say: how the host ended, and that trying again starts a new one."""
DEADLINE: Final = ("did not respond in time", "history")
"""What an error after a possibly submitted command must say: it timed out, check the history."""


Budget = Callable[[Budgets], float]
"""Picks one of the budgets (``startup_budget``, ``submit_budget``, ``read_budget``)."""


def startup_budget(budgets: Budgets) -> float:
    return budgets.startup


def submit_budget(budgets: Budgets) -> float:
    return budgets.submit


def read_budget(budgets: Budgets) -> float:
    return budgets.read


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault armed for one host, and the error the operation that meets it must end with."""

    faults: str
    kind: str
    phase: str
    says: tuple[str, ...]
    waits: Budget | None = None
    """The budget the adapter must wait out (the host hangs); None: it must not wait for one."""
    prompt: str = "after the fault"
    capabilities: schema.ClientCapabilities | None = field(default=None, compare=False)

    def check(self, settled: Settled, budgets: Budgets) -> None:
        self.check_error(settled)
        self.check_time(settled.elapsed, budgets)

    def check_error(self, settled: Settled) -> None:
        error = settled.raised
        assert error.code == INTERNAL_ERROR, error
        failure = settled.failure
        assert failure is not None, f"no data.failure on {error!r}"
        assert (failure["kind"], failure["phase"]) == (self.kind, self.phase), failure
        for phrase in self.says:
            assert phrase in str(error), f"{phrase!r} not in {str(error)!r}"

    def check_time(self, elapsed: float, budgets: Budgets) -> None:
        if self.waits is None:
            assert elapsed < budgets.startup, f"a dead host was waited for ({elapsed:.1f}s)"
        else:
            budget = self.waits(budgets)
            assert budget <= elapsed < budget + MARGIN, f"{elapsed:.1f}s for a {budget:g}s budget"


@asynccontextmanager
async def prepared(
    faulty: FaultWorld, capabilities: schema.ClientCapabilities | None = None, first: str = FIRST
) -> AsyncIterator[tuple[Agent, str]]:
    """An agent with a session whose first turn completed and whose host has idled away.

    On exit the agent is stopped and every host must be gone.
    """
    async with faulty.agent(capabilities) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, first)
        assert response.stop_reason == "end_turn"
        await faulty.all_exited(faulty.budgets.idle + MARGIN)
        yield agent, session
    await faulty.all_exited(MARGIN)


async def loads_with_history(
    faulty: FaultWorld,
    agent: Agent,
    session: str,
    then: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Load ``session`` in the same agent: its first turn is replayed, and every host the
    fault and the load started is gone soon after (after ``then``, when given)."""
    seen = len(agent.client.updates)
    with anyio.fail_after(WAIT):
        await agent.conn.load_session(
            session_id=session, cwd=str(faulty.world.workspace), mcp_servers=[]
        )
    replayed = [u for s, u in agent.client.updates[seen:] if s == session]
    said = {
        kind: "".join(u.content.text for u in replayed if u.session_update == kind)
        for kind in ("user_message_chunk", "agent_message_chunk")
    }
    assert FIRST in said["user_message_chunk"], said
    assert FIRST in said["agent_message_chunk"], said
    if then is not None:
        await then()
    await faulty.all_exited(faulty.budgets.idle + MARGIN)


async def host_saw(faulty: FaultWorld, method: str, count: int) -> None:
    """Wait until the hosts received ``count`` requests of ``method`` (a poll of the capture)."""
    world = faulty.world

    def arrived() -> bool:
        try:
            return len(world.host_requests(method)) >= count
        except ValueError:
            return False  # a host is still writing its last capture line

    await wait_until(
        arrived, WAIT, lambda: f"{method} never reached a host\n{world.stderr_text()[-3000:]}"
    )
