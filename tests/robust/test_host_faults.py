"""A host that fails at any point of a prompt's life: the prompt still settles, clearly.

Most tests run the agent under the official SDK client with short deadlines, complete one turn,
let that host idle away, then arm one fault for the next simulated host (see
``faults_harness``). Whatever the fault, the prompt (or its cancel) must settle within its
budget with an error that says what happened and what to do, every host must be gone once the
agent is idle again, and the session must load afterwards, in the same agent, with the history
that was durable (corrections, output reads and loads: ``test_read_faults``). The agent and its
hosts run in this process: what these tests check is what the agent does and says. Where the
claim is also about processes (a host that crashed is reaped, a hung one is killed), one case
runs ``muse-acp serve`` and muse-sim as processes; how a process ends does not depend on the
Muse version played.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
import pytest
from acp import schema

from muse_acp.sim.options.faults import Faults, FaultSyntaxError, parse_faults
from tests.agent_wire.harness import WAIT, Agent
from tests.robust.faults_harness import (
    DEADLINE,
    EXITED,
    MARGIN,
    Budgets,
    Fault,
    FaultWorld,
    Stopwatch,
    fault_world,
    host_saw,
    loads_with_history,
    prepared,
    settled_error,
    startup_budget,
    submit_budget,
    wait_until,
)
from tests.robust.procs import require_proc

pytestmark = pytest.mark.anyio

FORMS: Final = schema.ClientCapabilities(
    elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
)


def tiered(tmp_path: Path, process: bool, budgets: Budgets | None = None) -> FaultWorld:
    """A fault world in process, or (``process``) with processes, checked in ``/proc``."""
    if process:
        require_proc()
    return fault_world(tmp_path, budgets, process=process)


def test_the_fault_points_these_tests_use_parse_and_bad_sizes_are_refused() -> None:
    parsed = parse_faults("exit:stream,oversized:turn/start,oversized-bytes:20000000")
    assert parsed == Faults(
        exits=frozenset({"stream"}),
        oversized=frozenset({"turn/start"}),
        oversized_bytes=20_000_000,
        names=("exit:stream", "oversized:turn/start", "oversized-bytes:20000000"),
    )
    for bad in ("oversized-bytes:lots", f"oversized-bytes:{(64 << 20) + 1}"):
        with pytest.raises(FaultSyntaxError):
            parse_faults(bad)


# -- a prompt whose host fails --------------------------------------------------------------


PROMPT_FAULTS: Final = {
    "exit at startup": Fault(
        "exit:startup", "hostExited", "starting", (*EXITED, "injected fault exit:startup")
    ),
    "exit in the handshake": Fault(
        "exit:handshake", "hostExited", "starting", (*EXITED, "injected fault exit:handshake")
    ),
    "hang in the handshake": Fault(
        "hang:handshake",
        "deadlineExceeded",
        "starting",
        ("did not respond in time", "sending the prompt again is safe"),
        waits=startup_budget,
    ),
    "exit while the session is resumed": Fault(
        "exit-before-ack:session/resume", "hostExited", "starting", EXITED
    ),
    "exit before turn/start is acknowledged": Fault(
        "exit-before-ack:turn/start", "hostExited", "submitting", EXITED
    ),
    "exit right after turn/start is acknowledged": Fault(
        "exit-after-ack:turn/start", "hostExited", "running", EXITED
    ),
    "hang before turn/start is acknowledged": Fault(
        "hang-ack:turn/start", "deadlineExceeded", "submitting", DEADLINE, waits=submit_budget
    ),
    "exit mid-stream": Fault(
        "exit:stream", "hostExited", "running", (*EXITED, "injected fault exit:stream")
    ),
    "exit during an approval": Fault(
        "exit:approval", "hostExited", "running", EXITED, prompt="sim:approve make install"
    ),
    "hang before an approval decision is acknowledged": Fault(
        "hang-ack:approval/decide",
        "deadlineExceeded",
        "answering",
        DEADLINE,
        waits=submit_budget,
        prompt="sim:approve make install",
    ),
    "exit during a user question": Fault(
        "exit:userInput", "hostExited", "running", EXITED, prompt="sim:ask", capabilities=FORMS
    ),
    "hang before an answer is acknowledged": Fault(
        "hang-ack:userInput/answer",
        "deadlineExceeded",
        "answering",
        DEADLINE,
        waits=submit_budget,
        prompt="sim:ask",
        capabilities=FORMS,
    ),
}


@pytest.mark.parametrize(
    ("case", "process"),
    [
        *[pytest.param(case, False, id=name) for name, case in PROMPT_FAULTS.items()],
        # A crashed host process must also be reaped: the agent must wait for it.
        pytest.param(PROMPT_FAULTS["exit mid-stream"], True, id="exit mid-stream, processes"),
    ],
)
async def test_a_prompt_settles_with_a_clear_error_whatever_its_host_does(
    tmp_path: Path, case: Fault, process: bool
) -> None:
    faulty = tiered(tmp_path, process)
    budgets = faulty.budgets
    async with prepared(faulty, case.capabilities) as (agent, session):
        agent.client.answer_elicitations = True
        faulty.arm(case.faults)
        with settled_error(budgets.startup + MARGIN) as settled:
            await agent.prompt(session, case.prompt)
        assert faulty.fired
        case.check(settled, budgets)
        await loads_with_history(faulty, agent, session)


async def test_a_host_dying_while_the_client_holds_the_permission_dialog_settles_the_prompt(
    faulty: FaultWorld,
) -> None:
    async with prepared(faulty) as (agent, session):
        never = anyio.Event()
        agent.client.on_permission = never.wait
        faulty.arm("exit:approval")
        with settled_error(faulty.budgets.startup) as settled:
            await agent.prompt(session, "sim:approve make install")
        PROMPT_FAULTS["exit during an approval"].check(settled, faulty.budgets)
        assert faulty.world.host_requests("approval/decide") == []
        # Muse keeps the turn waiting on the approval: the load asks it again; cancelling it
        # there ends the turn, and every host goes.
        asked_again = anyio.Event()

        async def hold_again() -> None:
            asked_again.set()
            await never.wait()

        async def cancel_when_asked_again() -> None:
            with anyio.fail_after(WAIT):
                await asked_again.wait()
            await agent.conn.cancel(session_id=session)

        agent.client.on_permission = hold_again
        await loads_with_history(faulty, agent, session, then=cancel_when_asked_again)
        assert faulty.world.host_requests("approval/decide") == []
        assert faulty.world.host_requests("turn/cancel")


# -- a cancel the host does not help with -------------------------------------------------


async def _cancel_when(
    agent: Agent, session: str, prompt: str, ready: Callable[[], Awaitable[None]]
) -> float:
    """Send ``prompt``, cancel it once ``ready()`` returned; return how long the prompt took to
    settle after the cancel (it must settle ``cancelled``)."""
    stops: list[str] = []
    settled = anyio.Event()

    async def run() -> None:
        stops.append((await agent.prompt(session, prompt)).stop_reason)
        settled.set()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            await ready()
            watch = Stopwatch()
            await agent.conn.cancel(session_id=session)
            await settled.wait()
            took = watch.elapsed
    assert stops == ["cancelled"]
    return took


@dataclass(frozen=True, slots=True)
class CancelCase:
    faults: str
    prompt: str
    ready_at: str
    """The MSP request that must have reached the host before the cancel is sent; for
    ``turn/cancel`` the turn must be running instead (its cancel is what goes unanswered)."""


CANCEL_FAULTS: Final = {
    "the host never acknowledges turn/start": CancelCase(
        "hang-ack:turn/start", "hello", "turn/start"
    ),
    "the host never acknowledges turn/cancel": CancelCase(
        "hang-ack:turn/cancel", "sim:hold", "turn/cancel"
    ),
    "the host hangs in the handshake": CancelCase("hang:handshake", "hello", "initialize"),
    "the host streams slowly": CancelCase("slow:400", "one two three four five six", "turn/start"),
}


@pytest.mark.parametrize("case", CANCEL_FAULTS.values(), ids=CANCEL_FAULTS.keys())
async def test_a_cancel_settles_within_the_cancel_budget_whatever_the_host_does(
    faulty: FaultWorld, case: CancelCase
) -> None:
    budgets = faulty.budgets
    async with prepared(faulty) as (agent, session):
        faulty.arm(case.faults)
        thoughts = agent.client.kinds(session).count("agent_thought_chunk")
        started = len(faulty.world.host_requests(case.ready_at))

        async def ready() -> None:
            if case.ready_at == "turn/cancel":
                await agent.client.wait_for(session, "agent_thought_chunk", thoughts + 1)
            else:
                await host_saw(faulty, case.ready_at, started + 1)

        took = await _cancel_when(agent, session, case.prompt, ready)
        assert took < budgets.cancel + MARGIN / 2, f"the cancel took {took:.1f}s to settle"
        await loads_with_history(faulty, agent, session)


# -- frames a host should not send, and hosts that are slow or chatty ------------------------


HARMLESS_FAULTS: Final = {
    "a line that is not JSON before the ack": "malformed:turn/start",
    "a line over the host frame limit before the ack": "oversized:turn/start",
    "a line over the adapter's own frame limit before the ack": (
        "oversized:turn/start,oversized-bytes:20000000"
    ),
    "slow output": "slow:150",
    "megabytes of stderr at startup": "stderr-flood:8000000",
}


@pytest.mark.parametrize("faults", HARMLESS_FAULTS.values(), ids=HARMLESS_FAULTS.keys())
async def test_a_turn_streams_exactly_despite_a_misbehaving_host(
    faulty: FaultWorld, faults: str
) -> None:
    text = "every word of this reply arrives once and in order"
    if "stderr-flood" in faults:
        # Logging every line of a megabyte stderr flood at debug level would dominate run times.
        faulty.world.extra_env["MUSE_ACP_LOG"] = "info"
    async with prepared(faulty) as (agent, session):
        faulty.arm(faults)
        before = agent.client.text(session)
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, f"{text}\nsim:bash 2000")
        assert response.stop_reason == "end_turn"
        assert agent.client.text(session)[len(before) :] == text
        await loads_with_history(faulty, agent, session)


# -- a host left in an unknown state --------------------------------------------------------


UNKNOWN_STATE: Final = (
    "hang before turn/start is acknowledged",
    "hang before an approval decision is acknowledged",
)


@pytest.mark.parametrize(
    ("name", "process"),
    [
        # A hung host process must be killed and reaped, whatever the agent was waiting for.
        pytest.param(UNKNOWN_STATE[0], True, id=f"{UNKNOWN_STATE[0]}, processes"),
        pytest.param(UNKNOWN_STATE[1], False, id=UNKNOWN_STATE[1]),
    ],
)
async def test_a_host_left_in_an_unknown_state_is_closed_and_the_next_prompt_gets_a_fresh_one(
    tmp_path: Path, name: str, process: bool
) -> None:
    # Idle hosts are kept far longer than this test runs: only being closed ends this one.
    faulty = tiered(tmp_path, process, Budgets(idle=60.0))
    case = PROMPT_FAULTS[name]
    async with faulty.agent() as agent:
        session = await agent.new_session()
        faulty.arm(case.faults)
        with settled_error(faulty.budgets.startup + MARGIN) as settled:
            await agent.prompt(session, case.prompt)
        case.check(settled, faulty.budgets)
        await wait_until(lambda: not faulty.left(faulted=True), MARGIN, faulty.describe)
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "after the deadline")
        assert response.stop_reason == "end_turn"
        assert agent.client.text(session).endswith("after the deadline")
    await faulty.all_exited(MARGIN)
