"""Every frame the agent writes validates with the official ACP SDK's models, and every
``session/update`` with muse-acp's own ACP bundle too (the SDK's older models drop what ACP added
since, such as the tool call ``name``).

One scripted run touches every method the agent serves and every kind of update it sends; each
response is checked with the SDK model for the method it answers, each request and notification
with the SDK model for its method, and each error for the JSON-RPC error shape.
"""

from __future__ import annotations

from typing import Any

import acp
import anyio
import pytest
from acp import schema
from pydantic import BaseModel

from muse_acp_wire import acp as wire

from .harness import WAIT, World, running_agent

pytestmark = pytest.mark.anyio

RESPONSES: dict[str, type[BaseModel]] = {
    "initialize": schema.InitializeResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/list": schema.ListSessionsResponse,
    "session/resume": schema.ResumeSessionResponse,
    "session/fork": schema.ForkSessionResponse,
    "session/close": schema.CloseSessionResponse,
    "session/delete": schema.DeleteSessionResponse,
    "session/set_mode": schema.SetSessionModeResponse,
    "session/set_config_option": schema.SetSessionConfigOptionResponse,
    "session/prompt": schema.PromptResponse,
}
AGENT_MESSAGES: dict[str, type[BaseModel]] = {
    "session/update": schema.SessionNotification,
    "session/request_permission": schema.RequestPermissionRequest,
}


def _check(frames: list[tuple[str, dict[str, Any]]]) -> int:
    requests = {
        m["id"]: m["method"] for d, m in frames if d == "out" and "method" in m and "id" in m
    }
    checked = 0
    for direction, message in frames:
        if direction != "in":
            continue
        assert message.get("jsonrpc") == "2.0"
        if "method" in message:
            model = AGENT_MESSAGES[message["method"]]
            model.model_validate(message["params"])
            if message["method"] == "session/update":
                ours = wire.SessionNotification.model_validate(message["params"])
                dumped = ours.model_dump(mode="json", by_alias=True, exclude_unset=True)
                assert dumped == message["params"]
        elif "error" in message:
            schema.Error.model_validate(message["error"])
        else:
            method = requests[message["id"]]
            if method in RESPONSES:
                RESPONSES[method].model_validate(message["result"] or {})
        checked += 1
    return checked


async def test_every_frame_of_a_full_session_validates_with_the_sdk(world: World) -> None:
    async with running_agent(world) as agent:
        conn = agent.conn
        with anyio.fail_after(WAIT * 2):
            session = await agent.new_session()
            await agent.prompt(session, "hello\nsim:bash 5000\nsim:plan\nsim:search x")
            await agent.prompt(session, "sim:stages 2 make all")
            await agent.prompt(session, "/rename A readable title")
            await conn.set_session_mode(session_id=session, mode_id="readOnly")
            await conn.set_config_option(
                session_id=session, config_id="reasoningEffort", value="low"
            )
            await conn.list_sessions(cwd=str(world.workspace))
            forked = await conn.fork_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            await conn.close_session(session_id=forked.session_id)
            with pytest.raises(acp.RequestError):  # Muse 1.2.1 has no session/delete
                await conn._conn.send_request("session/delete", {"sessionId": forked.session_id})
            await conn.close_session(session_id=session)
            await conn.load_session(session_id=session, cwd=str(world.workspace), mcp_servers=[])
            await conn.resume_session(session_id=session, cwd=str(world.workspace), mcp_servers=[])
            with pytest.raises(acp.RequestError):
                await agent.prompt("01a00000-0000-7000-8000-00000000dead", "nobody")
    assert _check(agent.frames) > 20
    kinds = set(agent.client.kinds(session))
    assert {
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "user_message_chunk",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
    } <= kinds
