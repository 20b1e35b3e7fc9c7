"""Steering, settings and the other session requests, as they appear on the wire."""

from __future__ import annotations

import pytest

from muse_acp.rpc import JsonObject
from muse_acp_wire import acp

from .fake_agent import FORK_ID, SESSION_ID, FakeAgent, fake_client

pytestmark = pytest.mark.anyio


async def test_steer_names_the_expected_turn_and_returns_the_hosts_receipt() -> None:
    agent = FakeAgent()
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        receipt = await session.steer("use tabs, not spaces", "turn-42")
    assert (receipt.status, receipt.turn_id) == ("accepted", "turn-42")
    assert agent.params_of("_muse/steer") == [
        {
            "sessionId": SESSION_ID,
            "expectedTurnId": "turn-42",
            "prompt": [{"type": "text", "text": "use tabs, not spaces"}],
        }
    ]


async def test_compatible_steering_leaves_out_the_turn_unless_given() -> None:
    agent = FakeAgent()
    block = acp.TextContentBlock(type="text", text="stop after the tests")
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        first = await session.compatible_steer([block])
        await session.compatible_steer("and commit", expected_turn_id="turn-7")
    assert first.outcome == "injected"
    assert agent.params_of("_session/steering") == [
        {"sessionId": SESSION_ID, "prompt": [{"type": "text", "text": "stop after the tests"}]},
        {
            "sessionId": SESSION_ID,
            "prompt": [{"type": "text", "text": "and commit"}],
            "expectedTurnId": "turn-7",
        },
    ]


async def test_the_running_turn_is_tracked_from_session_info_updates() -> None:
    agent = FakeAgent()
    running: JsonObject = {
        "sessionUpdate": "session_info_update",
        "_meta": {"muse/activeTurnId": "turn-9"},
    }
    ended: JsonObject = {
        "sessionUpdate": "session_info_update",
        "_meta": {"muse/activeTurnId": None},
    }
    seen: list[str | None] = []

    async def script(agent: FakeAgent, session_id: str) -> str:
        await agent.send_update(session_id, running)
        await agent.send_update(session_id, ended)
        return "end_turn"

    agent.prompt_script = script
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        async for _update in session.prompt("work"):
            seen.append(session.active_turn_id)
    assert seen == ["turn-9", None]


async def test_set_config_option_sends_booleans_with_their_type_and_keeps_the_answer() -> None:
    agent = FakeAgent()
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        await session.set_config_option("model", "fast")
        options = await session.set_config_option("verbose", True)
        assert session.config_options == options
    assert [option.id for option in options] == ["verbose"]
    assert agent.params_of("session/set_config_option") == [
        {"sessionId": SESSION_ID, "configId": "model", "value": "fast"},
        {"sessionId": SESSION_ID, "configId": "verbose", "type": "boolean", "value": True},
    ]


async def test_fork_and_resume_return_sessions_with_their_modes() -> None:
    agent = FakeAgent()
    async with fake_client(agent) as client:
        forked = await client.fork_session("old-session", "/workspace")
        resumed = await client.resume_session("old-session", "/workspace")
        assert {session.session_id for session in client.sessions()} == {FORK_ID, "old-session"}
    assert forked.session_id == FORK_ID
    assert resumed.session_id == "old-session"
    assert resumed.current_mode_id == "default"
    assert agent.params_of("session/fork") == [
        {"sessionId": "old-session", "cwd": "/workspace", "mcpServers": []}
    ]
