"""What survives a restart of the agent, as editors restart it (updates, crashes, reopening a
project) and as one-process-per-command clients (acpx) run it: sessions that were never
prompted, and each session's mode, model and reasoning effort."""

from __future__ import annotations

import json
from typing import Any

import acp
import anyio
import pytest

from .harness import WAIT, World, running_agent

pytestmark = pytest.mark.anyio


def _current(options: list[Any], option_id: str) -> str:
    option = next(o for o in options if getattr(o, "root", o).id == option_id)
    return str(getattr(option, "root", option).current_value)


async def test_a_session_never_prompted_loads_at_once_and_after_a_restart(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            response = await agent.prompt(session, "first words, after a restart")
        assert response.stop_reason == "end_turn"
    [start] = world.host_requests("turn/start")
    assert start["params"]["sessionId"] == session


async def test_a_session_never_prompted_resumes_after_a_restart(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.resume_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            response = await agent.prompt(session, "hello")
    assert response.stop_reason == "end_turn"


async def test_an_unprompted_session_is_not_found_from_another_workspace(world: World) -> None:
    other = world.root / "elsewhere"
    other.mkdir()
    async with running_agent(world) as agent:
        session = await agent.new_session()
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.conn.load_session(session_id=session, cwd=str(other), mcp_servers=[])
    assert raised.value.code == -32002


async def test_mode_model_and_effort_come_back_after_a_restart(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "/models")
            listed = await agent.conn.set_config_option(
                session_id=session, config_id="reasoningEffort", value="high"
            )
            model_option = next(
                getattr(o, "root", o)
                for o in listed.config_options
                if getattr(o, "root", o).id == "model"
            )
            values = [v.value for v in model_option.options]
            chosen = values[-1]
            await agent.conn.set_config_option(session_id=session, config_id="model", value=chosen)
            await agent.conn.set_session_mode(session_id=session, mode_id="readOnly")
    stored = json.loads(next((world.data_dir / "sessions").glob("*.json")).read_text())
    assert stored["settings"]["modeId"] == "readOnly"
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            loaded = await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            await agent.prompt(session, "sim:bash 10")
        statuses = [
            u.status
            for s, u in agent.client.updates
            if s == session and u.session_update == "tool_call_update" and u.status
        ]
    assert loaded.modes is not None
    assert loaded.modes.current_mode_id == "readOnly"
    assert loaded.config_options is not None
    assert _current(loaded.config_options, "reasoningEffort") == "high"
    [*_, start] = world.host_requests("turn/start")
    assert start["params"]["reasoningEffort"] == "high"
    # Read-only: the host that ran the prompt had no shell, so the command failed.
    assert statuses[-1] == "failed"
    # The model chosen before the restart is asked of the new host before the turn.
    [*_, set_model] = world.host_requests("session/setModel")
    assert set_model["params"]["model"]["modelId"] == chosen.split("/")[-1]


async def test_an_unusable_stored_mode_is_reported_and_falls_back_to_ask(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        await agent.conn.set_session_mode(session_id=session, mode_id="readOnly")
    path = world.data_dir / "sessions" / f"{session}.json"
    document = json.loads(path.read_text())
    document["settings"]["modeId"] = "someRetiredMode"
    path.write_text(json.dumps(document))
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            loaded = await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        said = agent.client.text(session)
    assert loaded.modes is not None
    assert loaded.modes.current_mode_id == "default"
    assert "someRetiredMode" in said
    assert "Ask mode" in said
