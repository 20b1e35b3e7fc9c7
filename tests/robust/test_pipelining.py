"""Every request, pipelined with a cancel in the same write, is answered exactly once.

Clients pipeline: a request and its ``session/cancel`` or ``$/cancel_request`` often arrive in
one read of the agent. Whatever the pair, the request gets exactly one answer, the agent stays
up, and the session works at once afterwards. Frames written together with ``initialize``,
before the agent has loaded past it, are served the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest

from tests.agent_wire.harness import make_world
from tests.agent_wire.test_host_versions import VERSIONS

from .rawagent import RawAgent, id_key, raw_agent

pytestmark = pytest.mark.anyio

CANCELS: Final = ("session/cancel", "$/cancel_request")


def _requests(agent: RawAgent, session: str) -> dict[str, dict[str, Any]]:
    cwd = str(agent.world.workspace)
    text = [{"type": "text", "text": "sim:stream 500"}]
    return {
        "session/prompt": {"sessionId": session, "prompt": text},
        "session/new": {"cwd": cwd, "mcpServers": []},
        "session/load": {"sessionId": session, "cwd": cwd, "mcpServers": []},
        "session/resume": {"sessionId": session, "cwd": cwd, "mcpServers": []},
        "session/fork": {"sessionId": session, "cwd": cwd, "mcpServers": []},
        "session/list": {"cwd": cwd},
        "session/close": {"sessionId": session},
        "session/set_mode": {"sessionId": session, "modeId": "readOnly"},
        "session/set_config_option": {"sessionId": session, "configId": "mode", "value": "default"},
        "authenticate": {"methodId": "muse-login"},
        "_muse/readOutput": {"sessionId": session, "itemId": "i", "outputRef": "r"},
        "_muse/steer": {"sessionId": session, "expectedTurnId": "t", "prompt": text},
        "_session/steering": {"sessionId": session, "prompt": text},
    }


def _frame(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


async def test_each_request_and_a_cancel_in_one_write_get_exactly_one_answer(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    async with raw_agent(world) as agent:
        await agent.initialize()
        # A session Muse knows, so load, resume and fork have something to work on.
        known = await agent.new_session()
        assert "result" in await agent.prompt_text(known, "make it durable")
        for method in _requests(agent, known):
            for cancel in CANCELS:
                session = await agent.new_session()
                assert "result" in await agent.prompt_text(session, "warm")
                params = _requests(agent, session)[method]
                request_id = agent.next_id()
                note_params = (
                    {"sessionId": session}
                    if cancel == "session/cancel"
                    else {"requestId": request_id}
                )
                request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
                note = {"jsonrpc": "2.0", "method": cancel, "params": note_params}
                await agent.write(_frame(request) + _frame(note))
                answer = await agent.response(id_key(request_id))
                assert "result" in answer or "error" in answer, (method, cancel, answer)
                # Exactly one answer, and the agent goes on serving.
                after = await agent.prompt_text(known, "still there")
                assert after.get("result") == {"stopReason": "end_turn"}, (method, cancel, after)
                assert len(agent.responses[id_key(request_id)]) == 1, (method, cancel)
        assert agent.alive


@pytest.mark.parametrize("version", VERSIONS)
async def test_frames_pipelined_behind_initialize_are_each_answered_once(
    tmp_path: Path, version: str
) -> None:
    # The agent answers initialize before loading the rest of itself; frames that arrive in the
    # same write as initialize (a cancelled list among them) must still be served, once each.
    world = make_world(tmp_path, version=version)
    async with raw_agent(world) as agent:
        cwd = str(world.workspace)
        init, listing, new = agent.next_id(), agent.next_id(), agent.next_id()
        frames = [
            {
                "jsonrpc": "2.0",
                "id": init,
                "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}},
            },
            {"jsonrpc": "2.0", "id": listing, "method": "session/list", "params": {"cwd": cwd}},
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": listing}},
            {
                "jsonrpc": "2.0",
                "id": new,
                "method": "session/new",
                "params": {"cwd": cwd, "mcpServers": []},
            },
        ]
        await agent.write(b"".join(_frame(frame) for frame in frames))
        assert "result" in await agent.response(id_key(init))
        listed = await agent.response(id_key(listing))
        assert "result" in listed or "error" in listed
        created = await agent.response(id_key(new))
        session = created["result"]["sessionId"]
        done = await agent.prompt_text(session, "hello")
        assert done.get("result") == {"stopReason": "end_turn"}
        for key in (init, listing, new):
            assert len(agent.responses[id_key(key)]) == 1, key
        assert agent.alive
