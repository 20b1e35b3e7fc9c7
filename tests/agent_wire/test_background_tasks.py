"""``/tasks`` over the wire: the background tasks and workflows Muse runs for a session are
listed and stopped one by one (and a load replays their cards as they ended), and their cards
keep updating after the prompt ended, however
short the host's idle period (background work keeps its host, from 1.3.0, where Muse marks a
task sent to the background). muse-sim's ``sim:background`` and ``sim:workflow`` run on after
their turn and report progress once it ended; before 1.3.0 they complete by themselves, and
nothing can stop them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from .harness import WAIT, Agent, make_world, running_agent

pytestmark = pytest.mark.anyio

STOPPABLE = ("1.3.0", "1.4.2", "1.4.4", "1.4.13")
OLD_VERSIONS = ("1.1.1", "1.2.1")
IDLE = "0.2"
"""The host's idle period: shorter than muse-sim's wait before background work reports."""


def _cards(agent: Agent, session: str) -> list[Any]:
    return [
        u
        for s, u in agent.client.updates
        if s == session and u.session_update in ("tool_call", "tool_call_update")
    ]


async def _card_status(agent: Agent, session: str, card: str, after: int, status: str) -> None:
    """Wait (bounded) for an update of ``card`` with ``status`` past the first ``after``."""

    def seen() -> bool:
        return any(
            u.tool_call_id == card and u.status == status for u in _cards(agent, session)[after:]
        )

    await agent.client.wait_until(seen)


async def _reply(agent: Agent, session: str, text: str) -> str:
    before = len(agent.client.text(session))
    with anyio.fail_after(WAIT):
        response = await agent.prompt(session, text)
    assert response.stop_reason == "end_turn"
    return agent.client.text(session)[before:]


@pytest.mark.parametrize("version", STOPPABLE)
async def test_tasks_lists_background_work_and_stops_it_one_by_one(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    world.extra_env["MUSE_ACP_IDLE_TIMEOUT"] = IDLE
    async with running_agent(world) as agent:
        session = await agent.new_session()
        await _reply(agent, session, "sim:background make watch\nsim:workflow Audit the docs")
        first_task, first_workflow = (
            u for u in _cards(agent, session) if u.session_update == "tool_call"
        )
        task, workflow = first_task.tool_call_id, first_workflow.tool_call_id
        ended = len(_cards(agent, session))
        # Past the idle period, the host still runs the work and its cards still update.
        await _card_status(agent, session, task, ended, "in_progress")
        await _card_status(agent, session, workflow, ended, "in_progress")
        listed = await _reply(agent, session, "/tasks")
        before = len(_cards(agent, session))
        stopped_task = await _reply(agent, session, "/tasks stop 1")
        await _card_status(agent, session, task, before, "failed")
        left = await _reply(agent, session, "/tasks")
        stopped_workflow = await _reply(agent, session, f"/tasks stop {workflow}")
        await _card_status(agent, session, workflow, before, "failed")
        none_left = await _reply(agent, session, "/tasks")
        unknown = await _reply(agent, session, "/tasks stop 1")
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        replayed = {u.tool_call_id: u for u in _cards(agent, session)}
    # The load shows both cards as they ended, stopped.
    assert (replayed[task].title, replayed[task].status) == (first_task.title, "failed")
    assert (replayed[workflow].title, replayed[workflow].status) == (first_workflow.title, "failed")
    assert listed.startswith("Background work Muse runs for this session:")
    titled = first_task.title  # the card's title: Muse's description of the command
    assert titled == "Run a long command in the background"
    assert f"1. {titled} (background task, card {task})" in listed
    assert f"2. Workflow: Audit the docs (workflow, card {workflow})" in listed
    assert "Stop one with /tasks stop ID" in listed
    assert stopped_task == f"Muse is stopping {titled} (card {task}); its card shows the end."
    assert task not in left
    assert f"1. Workflow: Audit the docs (workflow, card {workflow})" in left
    assert f"Muse is stopping Workflow: Audit the docs (card {workflow})" in stopped_workflow
    assert "Muse runs no background task or workflow for this session now" in none_left
    assert "No background task or workflow '1' is running" in unknown
    [stop] = world.host_requests("task/stop")
    [cancel] = world.host_requests("workflow/cancel")
    assert stop["params"]["sessionId"] == cancel["params"]["sessionId"] == session
    assert len(world.host_requests("turn/start")) == 1


@pytest.mark.parametrize("version", OLD_VERSIONS)
async def test_tasks_says_older_muse_cannot_stop_work_that_still_updates_its_card(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        refused_before = await _reply(agent, session, "/tasks stop 1")
        await _reply(agent, session, "sim:background make watch")
        [card] = [u.tool_call_id for u in _cards(agent, session) if u.session_update == "tool_call"]
        ended = len(_cards(agent, session))
        await _card_status(agent, session, card, ended, "completed")  # Muse finished it
        refused = await _reply(agent, session, "/tasks stop 1")
        usage = await _reply(agent, session, "/tasks halt everything")
    for reply in (refused_before, refused):
        assert "Stopping background work needs Muse 1.3.0 or newer" in reply
        assert f"this Muse is {version}" in reply
        assert "nothing was stopped" in reply
    assert "Use /tasks to list the background tasks" in usage
    assert world.host_requests("task/stop") == []
