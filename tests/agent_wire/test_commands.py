"""Local commands, titles and content over the wire: what reaches Muse and what never does."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from muse_acp import __version__

from .harness import WAIT, World, make_world, running_agent

pytestmark = pytest.mark.anyio

PNG_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


async def test_local_commands_never_start_a_turn(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            for command in ("/models", "/skills", "/rename My title"):
                response = await agent.prompt(session, command)
                assert response.stop_reason == "end_turn"
            replies = agent.client.text(session)
            logout = await agent.prompt(session, "/logout")
        assert logout.stop_reason == "end_turn"
    assert world.host_requests("turn/start") == []
    assert replies.count("\n") >= 0
    assert "My title" in replies


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13"])
async def test_status_tells_where_the_session_stands_without_a_turn(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            before = await agent.prompt(session, "/status")
            idle = agent.client.text(session)
            await agent.prompt(session, "hello")
            turns = len(world.host_requests("turn/start"))
            shown = len(idle)
            await agent.prompt(session, "/status")
            running = agent.client.text(session)[shown:]
    assert before.stop_reason == "end_turn"
    assert f"- muse-acp: {__version__}" in idle
    assert f"- Muse: {version} (starts with the next prompt)" in idle
    assert "- Mode: Ask" in idle
    assert "- Safety: Sandbox: Enabled; " in idle
    assert "Shell: Enabled" in idle
    assert "- MCP servers: none from this client" in idle
    assert "- Context: not reported yet" in idle
    assert f"- Muse: {version} (running for this session)" in running
    assert re.search(r"- Context: [\d,]+ of [\d,]+ tokens", running)
    # Neither /status started a turn of its own.
    assert turns == 1
    assert len(world.host_requests("turn/start")) == 1


async def test_commands_are_advertised_after_new_session(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        update = await agent.client.wait_for(session, "available_commands_update")
    names = [command.name for command in update.available_commands]
    assert names[:5] == ["status", "models", "skills", "rename", "logout"] or set(names) >= {
        "status",
        "models",
        "skills",
        "rename",
        "logout",
    }


async def test_a_command_with_extra_instructions_executes_nothing(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.conn.prompt(
                session_id=session,
                prompt=[acp.text_block("/rename New name"), acp.text_block("and also do this")],
            )
        assert response.stop_reason == "end_turn"
        assert "session_info_update" not in agent.client.kinds(session)
    assert world.host_requests("turn/start") == []


async def test_rejected_content_sends_no_turn(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        bad_prompts: list[list[Any]] = [
            [acp.text_block("look"), acp.image_block("not base64!", "image/png")],
            [acp.text_block("listen"), acp.audio_block("AAAA", "audio/wav")],
            [acp.image_block(base64.b64encode(PNG_BYTES).decode(), "image/bmp")],
        ]
        for prompt in bad_prompts:
            with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
                await agent.conn.prompt(session_id=session, prompt=prompt)
            assert raised.value.code == -32602
    assert world.host_requests("turn/start") == []


async def test_images_and_blobs_reach_the_host_in_order(world: World) -> None:
    image = base64.b64encode(PNG_BYTES).decode()
    blob = schema.BlobResourceContents(
        uri="file:///tmp/data.bin",
        blob=base64.b64encode(b"\x00\x01\xff").decode(),
        mime_type="application/octet-stream",
    )
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.conn.prompt(
                session_id=session,
                prompt=[
                    acp.text_block("before"),
                    acp.image_block(image, "image/png"),
                    acp.resource_block(blob),
                    acp.text_block("after"),
                ],
            )
    [start] = world.host_requests("turn/start")
    parts = start["params"]["input"]
    assert [p["type"] for p in parts] == ["text", "image", "text", "text"]
    assert parts[1] == {"type": "image", "base64Data": image, "mediaType": "image/png"}
    assert base64.b64encode(b"\x00\x01\xff").decode() in parts[2]["text"]
    assert parts[0]["text"] == "before"
    assert parts[3]["text"] == "after"


async def test_a_user_title_survives_restart_and_wins_over_host_titles(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "a first prompt that Muse would use as a title")
            await agent.prompt(session, "/rename Quarterly report 中文")
        infos = [
            u
            for s, u in agent.client.updates
            if s == session and u.session_update == "session_info_update"
        ]
        assert infos[-1].title == "Quarterly report 中文"
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            listed = await agent.conn.list_sessions(cwd=str(world.workspace))
            row = next(r for r in listed.sessions if r.session_id == session)
            assert row.title == "Quarterly report 中文"
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            await agent.prompt(session, "a later prompt")
        titles = [
            u.title
            for s, u in agent.client.updates
            if s == session and u.session_update == "session_info_update" and u.title
        ]
        assert titles
        assert set(titles) == {"Quarterly report 中文"}


async def test_a_prompt_after_logout_needs_the_session_loaded_again(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "/logout")
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "still there?")
        assert raised.value.code == -32002


async def test_logout_says_an_exported_api_key_remains(world: World) -> None:
    world.extra_env["META_API_KEY"] = "canary-key-123456"
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "/logout")
        reply = agent.client.text(session)
    assert "META_API_KEY" in reply
    assert "canary-key-123456" not in reply
    assert "canary-key-123456" not in world.stderr_text()


async def test_search_cards_use_the_pattern_or_query_as_title(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:search TODO\\(.*\\)\nsim:web muse code release")
    cards = [u for s, u in agent.client.updates if s == session and u.session_update == "tool_call"]
    assert [(c.kind, c.title) for c in cards] == [
        ("search", "TODO\\(.*\\)"),
        ("search", "muse code release"),
    ]
