"""Work that outlives its prompt: workflow and subagent cards, updates after the prompt ended,
and stopping a workflow or background task with ``_muse/task``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from .harness import WAIT, Agent, ext_request, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

STOPPABLE = ("1.3.0", "1.4.2", "1.4.4", "1.4.13")
"""Muse versions that serve workflow/cancel and task/stop."""
OPTED_IN = schema.ClientCapabilities(field_meta={"muse/asyncTasks": 1})


def _cards(agent: Agent, session: str) -> list[Any]:
    return [
        u
        for s, u in agent.client.updates
        if s == session and u.session_update in ("tool_call", "tool_call_update")
    ]


async def _card_update(agent: Agent, session: str, card: str, after: int, status: str) -> Any:
    """Wait (bounded) for an update of ``card`` with ``status`` past the first ``after`` updates."""
    with anyio.fail_after(WAIT):
        while True:
            seen = [
                u
                for u in _cards(agent, session)[after:]
                if u.tool_call_id == card and u.status == status
            ]
            if seen:
                return seen[0]
            await agent.client.wait_for(
                session, "tool_call_update", len(_updates(agent, session)) + 1
            )


def _updates(agent: Agent, session: str) -> list[Any]:
    return [u for u in _cards(agent, session) if u.session_update == "tool_call_update"]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_workflow_card_is_titled_by_its_message_and_updates_after_the_prompt(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:workflow Audit the release notes")
        assert response.stop_reason == "end_turn"
        [first] = [u for u in _cards(agent, session) if u.session_update == "tool_call"]
        assert first.title == "Workflow: Audit the release notes"
        assert "inProgress" not in first.title
        during = len(_cards(agent, session))
        # After the prompt was answered, the workflow still reports progress on its card.
        later = await _card_update(agent, session, first.tool_call_id, during, "in_progress")
    assert later.title == "Workflow: Audit the release notes"


@pytest.mark.parametrize("version", STOPPABLE)
async def test_a_workflow_is_cancelled_through_muse_task(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        initialize = next(m for d, m in agent.frames if d == "in" and "result" in m)
        advertised = initialize["result"]["_meta"]["muse/asyncTasks"]
        assert advertised == {"version": 1, "method": "_muse/task", "actions": ["cancel"]}
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:workflow Migrate the schema")
        [card] = [u for u in _cards(agent, session) if u.session_update == "tool_call"]
        before = len(_cards(agent, session))
        result = await ext_request(
            agent,
            "_muse/task",
            {"sessionId": session, "target": card.tool_call_id, "action": "cancel"},
        )
        assert result == {"status": "accepted", "target": card.tool_call_id, "kind": "workflow"}
        ended = await _card_update(agent, session, card.tool_call_id, before, "failed")
    assert ended.title == "Workflow: Migrate the schema"
    [cancel] = world.host_requests("workflow/cancel")
    assert cancel["params"]["sessionId"] == session


@pytest.mark.parametrize("version", STOPPABLE)
async def test_a_background_task_is_stopped_through_muse_task(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:background make watch")
        [card] = [u for u in _cards(agent, session) if u.session_update == "tool_call"]
        before = len(_cards(agent, session))
        result = await ext_request(
            agent,
            "_muse/task",
            {"sessionId": session, "target": card.tool_call_id, "action": "cancel"},
        )
        assert result["kind"] == "task"
        assert result["status"] == "accepted"
        await _card_update(agent, session, card.tool_call_id, before, "failed")
    assert world.host_requests("task/stop")


@pytest.mark.parametrize("version", STOPPABLE)
async def test_muse_task_refuses_a_card_that_runs_nothing(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:bash 10")
        [card] = [u for u in _cards(agent, session) if u.session_update == "tool_call"]
        with pytest.raises(acp.RequestError) as raised:
            await ext_request(
                agent,
                "_muse/task",
                {"sessionId": session, "target": card.tool_call_id, "action": "cancel"},
            )
    assert raised.value.code == -32602
    assert "not the card of a running workflow or background task" in str(raised.value)


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1"])
async def test_muse_task_is_refused_clearly_where_muse_cannot_stop_work(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        initialize = next(m for d, m in agent.frames if d == "in" and "result" in m)
        assert "muse/asyncTasks" not in (initialize["result"].get("_meta") or {})
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:workflow Audit the release notes")
        [card] = [u for u in _cards(agent, session) if u.session_update == "tool_call"]
        with pytest.raises(acp.RequestError) as raised:
            await ext_request(
                agent,
                "_muse/task",
                {"sessionId": session, "target": card.tool_call_id, "action": "cancel"},
            )
    assert raised.value.code == -32600
    message = str(raised.value)
    assert f"this Muse ({version}) cannot stop a workflow" in message
    assert "1.3.0" in message
    data: dict[str, Any] = raised.value.data or {}
    assert data["failure"]["kind"] == "taskControlUnsupported"
    assert not world.host_requests("workflow/cancel")


async def test_muse_task_needs_the_opt_in(tmp_path: Path) -> None:
    world = make_world(tmp_path, version="1.4.2")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with pytest.raises(acp.RequestError) as raised:
            await ext_request(
                agent, "_muse/task", {"sessionId": session, "target": "x", "action": "cancel"}
            )
    assert raised.value.code == -32600
    assert 'clientCapabilities._meta["muse/asyncTasks"] = 1' in str(raised.value)
