"""``/compact``, ``/goal`` and ``/mcp`` over the wire, on every Muse version: what reaches Muse,
what the user is told, and that none of them starts a model turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from .harness import WAIT, Agent, World, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
GOAL_VERSIONS = ("1.3.0", "1.4.2", "1.4.4", "1.4.13")
OLD_VERSIONS = ("1.1.1", "1.2.1")


async def _reply(agent: Agent, session: str, text: str) -> str:
    """Send ``text`` as a prompt; the agent text it produced (the prompt must end normally)."""
    before = len(agent.client.text(session))
    with anyio.fail_after(WAIT):
        response = await agent.prompt(session, text)
    assert response.stop_reason == "end_turn"
    return agent.client.text(session)[before:]


def _goal_updates(agent: Agent, session: str) -> list[Any]:
    """The ``_meta["muse/goal"]`` of every session_info_update that carried one."""
    return [
        update.field_meta["muse/goal"]
        for sid, update in agent.client.updates
        if sid == session
        and update.session_update == "session_info_update"
        and update.field_meta
        and "muse/goal" in update.field_meta
    ]


@pytest.mark.parametrize("version", VERSIONS)
async def test_status_goal_and_mcp_never_start_a_turn(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        for command in ("/status", "/goal", "/mcp"):
            assert await _reply(agent, session, command)
        # Also once Muse has the session and its host runs.
        await _reply(agent, session, "hello")
        for command in ("/status", "/goal", "/mcp"):
            assert await _reply(agent, session, command)
    assert len(world.host_requests("turn/start")) == 1


@pytest.mark.parametrize("version", VERSIONS)
async def test_new_commands_are_advertised_with_hints(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        update = await agent.client.wait_for(session, "available_commands_update")
    commands = {command.name: command for command in update.available_commands}
    for name in ("review", "review-branch", "review-commit", "goal"):
        assert commands[name].input is not None, name
        assert commands[name].input.root.hint, name
    for name in ("compact", "mcp"):
        assert commands[name].description
        assert commands[name].input is None


@pytest.mark.parametrize("version", VERSIONS)
async def test_compact_reports_noop_then_compacted(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        nothing = await _reply(agent, session, "/compact")
        await _reply(agent, session, "hello")
        compacted = await _reply(agent, session, "/compact")
        again = await _reply(agent, session, "/compact")
    assert "Nothing was compacted" in nothing
    assert "no history to compact" in nothing
    assert "Compacted" in compacted
    assert "tokens" in compacted
    assert "Nothing was compacted" in again
    assert len(world.host_requests("session/compact")) == 3
    assert len(world.host_requests("turn/start")) == 1


async def test_compact_takes_no_argument(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        reply = await _reply(agent, session, "/compact now please")
    assert "takes no argument" in reply
    assert world.host_requests("session/compact") == []


@pytest.mark.parametrize("version", GOAL_VERSIONS)
async def test_goal_controls_reach_muse_and_changes_reach_the_client(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        shown_before = await _reply(agent, session, "/goal")
        set_reply = await _reply(agent, session, "/goal set Ship the parser rewrite")
        paused = await _reply(agent, session, "/goal pause")
        paused_twice = await _reply(agent, session, "/goal pause")
        resumed = await _reply(agent, session, "/goal resume")
        shown = await _reply(agent, session, "/goal")
        cleared = await _reply(agent, session, "/goal clear")
        nothing = await _reply(agent, session, "/goal pause")
        goals = _goal_updates(agent, session)
    assert "has not announced a goal" in shown_before
    assert "Goal set." in set_reply
    assert "Goal: Ship the parser rewrite" in set_reply
    assert "Status: active" in set_reply
    assert "Status: paused" in paused
    assert "not active, so there was nothing to pause" in paused_twice
    assert "Status: active" in resumed
    assert "Goal: Ship the parser rewrite" in shown
    assert "no goal" in cleared
    assert "no goal, so there was nothing to pause" in nothing
    assert [g["goal"] and g["goal"]["status"] for g in goals] == [
        "active",
        "paused",
        "active",
        None,
    ]
    assert goals[0]["goal"]["objective"] == "Ship the parser rewrite"
    methods = [f["method"] for f in world.host_requests() if f["method"].startswith("goal/")]
    assert methods == [
        "goal/set",
        "goal/pause",
        "goal/pause",
        "goal/resume",
        "goal/clear",
        "goal/pause",
    ]
    assert world.host_requests("turn/start") == []


@pytest.mark.parametrize("version", OLD_VERSIONS)
async def test_goal_controls_are_refused_on_older_muse(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        shown = await _reply(agent, session, "/goal")
        refused = await _reply(agent, session, "/goal set Ship it")
        paused = await _reply(agent, session, "/goal pause")
    assert "has not announced a goal" in shown
    for reply in (refused, paused):
        assert "need Muse 1.3.0 or newer" in reply
        assert f"this Muse is {version}" in reply
        assert "nothing was changed" in reply
    assert [f for f in world.host_requests() if f["method"].startswith("goal/")] == []
    assert world.host_requests("turn/start") == []


async def test_goal_usage_is_explained(tmp_path: Path) -> None:
    world = make_world(tmp_path, version="1.4.2")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        bare_set = await _reply(agent, session, "/goal set")
        unknown = await _reply(agent, session, "/goal finish it")
    for reply in (bare_set, unknown):
        assert "Use /goal to show the session goal" in reply
    assert [f for f in world.host_requests() if f["method"].startswith("goal/")] == []


@pytest.mark.parametrize("version", VERSIONS)
async def test_mcp_lists_servers_by_name_and_transport_without_secrets(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    secret = "sk-very-secret-value-123"
    server = schema.McpServerStdio(
        name="files",
        command="/usr/bin/env",
        args=["--token", secret],
        env=[schema.EnvVariable(name="API_TOKEN", value=secret)],
    )
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            response = await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=[server])
        listed = await _reply(agent, response.session_id, "/mcp")
        status = await _reply(agent, response.session_id, "/status")
        empty_session = await agent.new_session()
        empty = await _reply(agent, empty_session, "/mcp")
    assert "'files': stdio" in listed
    assert "1 environment variable" in listed
    assert secret not in listed
    assert "/usr/bin/env" not in listed
    assert "no MCP servers" in empty
    assert "- MCP servers: files (stdio)" in status
    assert secret not in status
    assert world.host_requests("turn/start") == []


@pytest.mark.parametrize("version", GOAL_VERSIONS)
async def test_a_loaded_session_shows_the_goal_from_its_history(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        await _reply(agent, session, "/goal set Keep the docs current")
        await _reply(agent, session, "/goal pause")
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        replayed = _goal_updates(agent, session)
        shown = await _reply(agent, session, "/goal")
    assert replayed[-1]["goal"]["status"] == "paused"
    assert "Goal: Keep the docs current" in shown
    assert "Status: paused" in shown
