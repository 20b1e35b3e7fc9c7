"""Helpers for muse-acp's host-fault and load tests: armed faults, short budgets, /proc checks.

A ``FaultWorld`` is the wire tests' isolated ``World`` whose ``muse`` executable is a small
wrapper around muse-sim. The wrapper appends the pid of every process it starts to a file
(``exec`` keeps the pid, so it is the simulator's own) and hands ``MUSE_SIM_FAULTS`` to exactly
one host: the first ``serve`` started after ``arm``. Every other host runs with the world's own
environment, so one agent can meet a fault and then load the same session through a healthy
host.

``Budgets`` sets the adapter's deadlines short, so a hang shows up in seconds; ``settled_error``
times an operation that must fail, and a ``Fault`` says which error and which timing it must
fail with. ``prepared`` yields an agent whose session has one durable turn and no host left
running, and ``loads_with_history`` checks that this turn survives whatever happened since.
The ``/proc`` helpers answer "is this process gone", "which processes has this one started"
and "how many files does it hold" with the standard library alone (Linux only; tests call
``require_proc`` to skip elsewhere). ``/proc`` has no change notification, so waiting on it
is a poll with a deadline (``wait_until``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import acp
import anyio
import pytest
from acp import schema

from muse_acp.sim.launcher import write_launcher
from tests.agent_wire.harness import WAIT, Agent, World, failure_of, make_world, running_agent

__all__ = [
    "FIRST",
    "INTERNAL_ERROR",
    "MARGIN",
    "POLL",
    "Budget",
    "Budgets",
    "Fault",
    "FaultWorld",
    "Settled",
    "Stopwatch",
    "agent_pid",
    "announced_turn",
    "children",
    "fault_world",
    "host_saw",
    "is_running",
    "loads_with_history",
    "open_fds",
    "prepared",
    "read_budget",
    "require_proc",
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
PROC: Final = Path("/proc")
ACTIVE_TURN: Final = "muse/activeTurnId"


def require_proc() -> None:
    """Skip the calling test where there is no Linux ``/proc`` to observe processes with."""
    if not (PROC / "self" / "stat").exists():
        pytest.skip("process checks read /proc, which only Linux provides")


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
    """A ``World`` whose simulated hosts are recorded and can be given faults one at a time."""

    world: World
    budgets: Budgets
    pid_file: Path
    armed: Path

    def arm(self, faults: str) -> None:
        """Give ``faults`` (a ``MUSE_SIM_FAULTS`` value) to the next host that starts serving."""
        staged = self.armed.with_suffix(".staged")
        staged.write_text(faults)
        staged.replace(self.armed)  # the wrapper must never read half a fault list

    @property
    def fired(self) -> bool:
        """A host took the armed faults."""
        return not self.armed.exists()

    def faulted(self) -> list[int]:
        """The pids of the hosts that took armed faults."""
        return [int(path.suffix[1:]) for path in self.armed.parent.glob(f"{_FIRED}.*")]

    def pids(self) -> list[int]:
        """Every muse-sim process started so far (hosts, version probes, other commands)."""
        if not self.pid_file.exists():
            return []
        return [int(line) for line in self.pid_file.read_text().split()]

    def running(self) -> list[int]:
        return [pid for pid in self.pids() if is_running(pid)]

    async def all_exited(self, within: float) -> None:
        """Wait until every recorded muse-sim process is gone (exited and reaped)."""
        await wait_until(lambda: not self.running(), within, self.describe)

    def describe(self) -> str:
        """What is still running, and the end of the agent's log, for a failure message."""
        alive = {pid: _cmdline(pid) for pid in self.running()}
        return f"muse-sim processes still present: {alive}\n{self.world.stderr_text()[-3000:]}"


def fault_world(root: Path, budgets: Budgets | None = None, version: str = "1.2.1") -> FaultWorld:
    """A fresh isolated world under ``root`` whose ``muse`` records pids and takes armed faults."""
    budgets = budgets or Budgets()
    world = make_world(root, version)
    pid_file = root / "sim-pids"
    armed = root / "armed-faults"
    prelude = _PRELUDE.format(
        pids=shlex.quote(str(pid_file)),
        armed=shlex.quote(str(armed)),
        fired=shlex.quote(str(root / _FIRED)),
    )
    write_launcher(world.muse_bin, prelude=prelude)
    world.extra_env.update(budgets.env())
    # Logging every line of a megabyte stderr flood at debug level would dominate run times.
    world.extra_env["MUSE_ACP_LOG"] = "info"
    return FaultWorld(world, budgets, pid_file, armed)


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


# -- /proc ---------------------------------------------------------------------------------


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name, or None when it is gone."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name is parenthesised and may itself hold spaces or parentheses.
    return raw[raw.rindex(")") + 2 :].split()


def is_running(pid: int) -> bool:
    """The process exists, running or as an unreaped zombie: either way it was left behind."""
    return _stat_fields(pid) is not None


def children(pid: int) -> list[int]:
    """The processes (zombies included) whose parent is ``pid``."""
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def open_fds(pid: int) -> int:
    """How many file descriptors ``pid`` holds open."""
    return len(os.listdir(PROC / str(pid) / "fd"))


def _cmdline(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except (FileNotFoundError, ProcessLookupError):
        return "(gone)"


def agent_pid(world: World) -> int:
    """The pid of the ``muse-acp serve`` process this test started for ``world``."""
    marker = f"MUSE_SIM_HOME={world.sim_home}".encode()
    for pid in children(os.getpid()):
        try:
            environ = (PROC / str(pid) / "environ").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if marker in environ and "muse_acp serve" in _cmdline(pid):
            return pid
    raise AssertionError("the muse-acp serve process of this test was not found")


# -- a prepared agent and the faults it meets ---------------------------------------------


FIRST: Final = "the durable first words"
"""The first prompt of every test; its turn completed, so every fault must leave it loadable."""
INTERNAL_ERROR: Final = -32603
"""The code of every failure of a turn, a read or a load."""


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

    On exit the agent is stopped and every muse-sim process must be gone.
    """
    async with running_agent(faulty.world, capabilities=capabilities, process=True) as agent:
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
