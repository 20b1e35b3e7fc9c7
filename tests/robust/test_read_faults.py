"""A host that fails a correction, an output read or a session load: each settles, clearly.

As in ``test_host_faults``: the agent and its hosts run in this process, one turn completes and
its host idles away, then one fault is armed for the next simulated host. The request that
meets it must settle within its budget with an error that says what happened, every host must
be gone once the agent is idle again, and the session must load afterwards with its history.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from acp import schema

from tests.agent_wire.harness import WAIT, Agent, ext_request
from tests.robust.faults_harness import (
    DEADLINE,
    EXITED,
    FIRST,
    IN_PROCESS,
    INTERNAL_ERROR,
    MARGIN,
    Fault,
    FaultWorld,
    Settled,
    announced_turn,
    fault_world,
    loads_with_history,
    prepared,
    read_budget,
    settled_error,
    startup_budget,
    submit_budget,
)

pytestmark = pytest.mark.anyio

STEERING: Final = schema.ClientCapabilities(field_meta={"muse/steering": 1})
OUTPUT: Final = schema.ClientCapabilities(field_meta={"muse/output": 1})


# -- steering and output reads ------------------------------------------------------------


STEER_FAULTS: Final = {
    "the host exits when the correction arrives": Fault(
        "exit:steer", "hostExited", "running", (*EXITED, "injected fault exit:steer")
    ),
    "the host never acknowledges the correction": Fault(
        "hang-ack:turn/steer", "deadlineExceeded", "steering", DEADLINE, waits=submit_budget
    ),
}


@pytest.mark.parametrize("case", STEER_FAULTS.values(), ids=STEER_FAULTS.keys())
async def test_a_correction_and_its_prompt_settle_when_the_host_fails_the_correction(
    faulty: FaultWorld, case: Fault
) -> None:
    budgets = faulty.budgets
    async with prepared(faulty, STEERING) as (agent, session):
        faulty.arm(case.faults)
        seen = agent.client.kinds(session).count("session_info_update")
        prompt = Settled()

        async def run_prompt() -> None:
            with settled_error(WAIT) as settled:
                await agent.prompt(session, "sim:hold")
            prompt.error = settled.error

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run_prompt)
                turn = await announced_turn(agent, session, seen)
                with settled_error(budgets.startup + MARGIN) as steer:
                    await ext_request(
                        agent,
                        "_muse/steer",
                        {
                            "sessionId": session,
                            "expectedTurnId": turn,
                            "prompt": [{"type": "text", "text": "a correction"}],
                        },
                    )
        assert steer.raised.code == INTERNAL_ERROR, steer.raised
        case.check_time(steer.elapsed, budgets)
        case.check_error(prompt)
        await loads_with_history(faulty, agent, session)


def _stored_outputs(agent: Agent, session: str) -> list[dict[str, Any]]:
    return [
        update.field_meta["muse/output"]
        for sid, update in agent.client.updates
        if sid == session
        and update.session_update in ("tool_call", "tool_call_update")
        and update.field_meta
        and "muse/output" in update.field_meta
    ]


READ_HOST_HANG: Final = Fault(
    "hang:handshake",
    "deadlineExceeded",
    "starting",
    (
        "did not respond in time",
        f"starting the Muse host took longer than {IN_PROCESS.startup:g} s",
    ),
    waits=startup_budget,
)
READ_FAULTS: Final = {
    "the host exits when the read arrives": Fault(
        "exit:readOutput", "hostExited", "reading", (*EXITED, "injected fault exit:readOutput")
    ),
    "the host never answers the read": Fault(
        "hang-ack:item/readOutput",
        "deadlineExceeded",
        "reading",
        ("did not respond in time",),
        waits=read_budget,
    ),
    "the host hangs in its handshake": READ_HOST_HANG,
}


@pytest.mark.parametrize("case", READ_FAULTS.values(), ids=READ_FAULTS.keys())
async def test_an_output_read_settles_when_its_host_fails(faulty: FaultWorld, case: Fault) -> None:
    budgets = faulty.budgets
    async with prepared(faulty, OUTPUT, first=f"{FIRST}\nsim:bash 3000") as (agent, session):
        reference = _stored_outputs(agent, session)[-1]
        faulty.arm(case.faults)
        with settled_error(budgets.startup + MARGIN) as settled:
            await ext_request(
                agent,
                "_muse/readOutput",
                {key: reference[key] for key in ("sessionId", "itemId", "outputRef")},
            )
        case.check(settled, budgets)
        await loads_with_history(faulty, agent, session)


@pytest.mark.parametrize(
    "case",
    [
        READ_FAULTS["the host exits when the read arrives"],
        READ_FAULTS["the host never answers the read"],
    ],
    ids=["the turn's host exits when the read arrives", "the turn's host never answers the read"],
)
async def test_a_read_on_the_turns_own_host_settles_and_the_session_goes_on(
    tmp_path: Path, case: Fault
) -> None:
    # Hosts stay up for a minute here, so the read finds the turn's host still running.
    faulty = fault_world(tmp_path, replace(IN_PROCESS, idle=60.0))
    async with faulty.agent(OUTPUT) as agent:
        warm_up = await agent.new_session()  # uses up the executable's probes
        with anyio.fail_after(WAIT):
            assert (await agent.prompt(warm_up, FIRST)).stop_reason == "end_turn"
        faulty.arm(case.faults)
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, f"{FIRST}\nsim:bash 3000")
        assert response.stop_reason == "end_turn"
        assert faulty.fired, "the session's turn host took the faults"
        hosts = len(faulty.world.host_requests("initialize"))
        reference = _stored_outputs(agent, session)[-1]
        with settled_error(faulty.budgets.startup + MARGIN) as settled:
            await ext_request(
                agent,
                "_muse/readOutput",
                {key: reference[key] for key in ("sessionId", "itemId", "outputRef")},
            )
        case.check(settled, faulty.budgets)
        with anyio.fail_after(WAIT):
            assert (await agent.prompt(session, "after the read")).stop_reason == "end_turn"
        started = len(faulty.world.host_requests("initialize")) - hosts
        if case.waits is None:
            assert started == 1, "the host the read killed is replaced for the next turn"
        else:
            assert started == 0, "a read that ran out of time leaves the turn's host running"
    await faulty.all_exited(MARGIN)


LOAD_FAULTS: Final = {
    "the host exits when session/read arrives": Fault(
        "exit-before-ack:session/read", "hostExited", "reading", EXITED
    ),
    "the host exits while the history is paged": Fault(
        "exit-before-ack:view/page", "hostExited", "reading", EXITED
    ),
    "the host hangs in its handshake": READ_HOST_HANG,
}


@pytest.mark.parametrize("case", LOAD_FAULTS.values(), ids=LOAD_FAULTS.keys())
async def test_a_load_whose_host_dies_fails_clearly_and_the_next_load_works(
    faulty: FaultWorld, case: Fault
) -> None:
    async with prepared(faulty) as (agent, session):
        faulty.arm(case.faults)
        with settled_error(faulty.budgets.startup + MARGIN) as settled:
            await agent.conn.load_session(
                session_id=session, cwd=str(faulty.world.workspace), mcp_servers=[]
            )
        case.check(settled, faulty.budgets)
        await loads_with_history(faulty, agent, session)
