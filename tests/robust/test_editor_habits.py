"""What editors and scripts do every day, as their raw frames: abort a prompt's request future
(``$/cancel_request``), stop and send something else at once, resume while a prompt runs.

Each drives ``muse-acp serve`` with the raw client against muse-sim and checks what a user
would notice: Muse is told, the prompt settles, and the next prompt runs.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import pytest

from .faults_harness import Budgets, FaultWorld, fault_world
from .rawagent import EXTENSIONS, RawAgent
from .test_defects import cancel_frame, frames, prompt_frame, start_prompt

pytestmark = pytest.mark.anyio

BUDGETS: Final = Budgets(startup=8.0, submit=2.0, cancel=2.0, read=5.0, idle=60.0)


@pytest.fixture
def faulty(tmp_path: Path) -> FaultWorld:
    return fault_world(tmp_path, BUDGETS)


def _planned(agent: RawAgent, session: str) -> bool:
    return any(
        n.get("method") == "session/update"
        and n["params"].get("sessionId") == session
        and n["params"]["update"].get("sessionUpdate") == "plan"
        for n in agent.notifications
    )


@asynccontextmanager
async def holding_turn(faulty: FaultWorld) -> AsyncIterator[tuple[RawAgent, str, str]]:
    """An agent whose new session runs a turn that holds until cancelled, its plan already
    shown: the agent, the session and the key of the prompt's response."""
    async with faulty.raw_agent(BUDGETS.env()) as agent:
        await agent.result("initialize", {"protocolVersion": 1, "clientCapabilities": EXTENSIONS})
        session = await agent.new_session()
        key = await start_prompt(agent, session, "sim:plan\nsim:hold")
        await agent.wait_until(lambda: _planned(agent, session), "the turn's plan")
        yield agent, session, key


async def test_cancel_request_on_a_running_prompt_cancels_the_muse_turn(
    faulty: FaultWorld,
) -> None:
    async with holding_turn(faulty) as (agent, session, key):
        request_id = json.loads(key)
        await agent.send(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}
        )
        response = await agent.response(key)
        after = await agent.prompt_text(session, "the next prompt")
    assert response["error"]["code"] == -32800
    assert len(faulty.world.host_requests("turn/cancel")) == 1
    assert after.get("result") == {"stopReason": "end_turn"}


async def test_a_prompt_sent_right_after_a_cancel_runs_once_the_cancel_settled(
    faulty: FaultWorld,
) -> None:
    async with holding_turn(faulty) as (agent, session, first):
        # "Stop, and do this instead": the cancel and the new prompt in one write.
        await agent.write(frames(cancel_frame(session), prompt_frame("p2", session, "instead")))
        cancelled = await agent.response(first)
        second = await agent.response(json.dumps("p2"))
    assert cancelled.get("result") == {"stopReason": "cancelled"}
    assert second.get("result") == {"stopReason": "end_turn"}
    assert len(faulty.world.host_requests("turn/start")) == 2


async def test_resume_while_a_prompt_runs_is_refused_like_load_and_fork(
    faulty: FaultWorld,
) -> None:
    async with holding_turn(faulty) as (agent, session, first):
        params = {"sessionId": session, "cwd": str(faulty.world.workspace), "mcpServers": []}
        resumed = await agent.request("session/resume", params)
        await agent.send(cancel_frame(session))
        settled = await agent.response(first)
    assert resumed["error"]["code"] == -32600
    assert settled.get("result") == {"stopReason": "cancelled"}
