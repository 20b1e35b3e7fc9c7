"""Opening a connection and working with sessions against the in-memory fake agent."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from muse_acp.client import AgentError, client_capabilities, extensions, message_text
from muse_acp.client.connect import connect_streams
from muse_acp.rpc import INVALID_PARAMS, RESOURCE_NOT_FOUND, JsonObject, JsonValue, RpcError
from muse_acp.rpc.memory import memory_stream_pair
from muse_acp_wire import acp

from .fake_agent import SESSION_ID, WAIT, FakeAgent, fake_client, text_chunk

pytestmark = pytest.mark.anyio

COMMANDS: JsonObject = {
    "sessionUpdate": "available_commands_update",
    "availableCommands": [{"name": "models", "description": "Refresh the model menu"}],
}


async def test_initialize_offers_no_file_system_no_terminal_and_no_elicitation_by_default() -> None:
    agent = FakeAgent()
    async with fake_client(agent) as client:
        assert client.initialize_response.protocol_version == 1
    (params,) = agent.params_of("initialize")
    assert isinstance(params, dict)
    assert params["protocolVersion"] == 1
    assert params["clientCapabilities"] == {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
    }
    assert isinstance(params["clientInfo"], dict)
    assert params["clientInfo"]["name"] == "muse-acp-client"


async def test_an_elicitation_handler_adds_form_elicitation_to_the_capabilities() -> None:
    agent = FakeAgent()

    def never(request: acp.CreateElicitationRequest) -> acp.CreateElicitationResponse:
        return acp.CreateElicitationResponse(action="decline")

    async with fake_client(agent, capabilities=extensions(), on_elicitation=never):
        pass
    (params,) = agent.params_of("initialize")
    assert isinstance(params, dict)
    assert params["clientCapabilities"] == {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "elicitation": {"form": {}},
        "_meta": {"muse/output": 1, "muse/steering": 1, "steering": {"supported": True}},
    }


def test_extensions_keep_other_meta_entries_and_only_add_what_is_asked() -> None:
    base = client_capabilities()
    base.field_meta = {"vendor/thing": True}
    chosen = extensions(output=True, steering=False, compatible_steering=False, base=base)
    assert chosen.field_meta == {"vendor/thing": True, "muse/output": 1}
    assert base.field_meta == {"vendor/thing": True}


async def test_an_agent_speaking_another_protocol_version_is_refused() -> None:
    agent = FakeAgent()
    agent.protocol_version = 2
    with pytest.raises(AgentError, match="ACP version 2"):
        async with fake_client(agent):
            pass


async def test_initialize_that_is_never_answered_times_out() -> None:
    (client_rx, client_tx), (agent_rx, agent_tx) = memory_stream_pair()
    with anyio.fail_after(WAIT), pytest.raises(TimeoutError):
        async with connect_streams(client_rx, client_tx, startup_timeout=0.2):
            pass
    for stream in (client_rx, client_tx, agent_rx, agent_tx):
        await stream.aclose()


async def test_a_new_session_carries_its_modes_and_the_updates_that_follow_its_response() -> None:
    agent = FakeAgent()
    agent.after_new = [COMMANDS, {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}]
    seen: list[acp.SessionUpdate] = []
    both = anyio.Event()

    def on_update(update: acp.SessionUpdate) -> None:
        seen.append(update)
        if len(seen) == 2:
            both.set()

    async with fake_client(agent) as client:
        session = await client.new_session("/workspace", on_update=on_update)
        with anyio.fail_after(WAIT):
            await both.wait()
        assert session.session_id == SESSION_ID
        assert [command.name for command in session.available_commands] == ["models"]
        assert session.current_mode_id == "plan"
        assert [update.session_update for update in seen] == [
            "available_commands_update",
            "current_mode_update",
        ]
    assert agent.params_of("session/new") == [{"cwd": "/workspace", "mcpServers": []}]


async def test_load_collects_the_replayed_history_when_no_callback_is_given() -> None:
    agent = FakeAgent()
    user: JsonObject = {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": "hi"},
    }
    title: JsonObject = {"sessionUpdate": "session_info_update", "title": "Greetings"}
    agent.replay = [user, text_chunk("hello"), title]
    async with fake_client(agent) as client:
        session = await client.load_session("old-session", "/workspace")
        assert [update.session_update for update in session.replayed] == [
            "user_message_chunk",
            "agent_message_chunk",
            "session_info_update",
        ]
        assert message_text(session.replayed[1]) == "hello"
        assert session.title == "Greetings"
        assert session.current_mode_id == "default"


async def test_load_delivers_the_replayed_history_to_an_async_callback_in_order() -> None:
    agent = FakeAgent()
    agent.replay = [text_chunk(str(index)) for index in range(20)]
    seen: list[str | None] = []

    async def on_update(update: acp.SessionUpdate) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(message_text(update))

    async with fake_client(agent) as client:
        session = await client.load_session("old-session", "/workspace", on_update=on_update)
    assert seen == [str(index) for index in range(20)]
    assert session.replayed == []


async def test_list_sessions_follows_every_cursor_once_and_passes_it_back_unchanged() -> None:
    agent = FakeAgent()

    def row(number: int) -> JsonValue:
        return {"sessionId": f"s-{number}", "cwd": "/workspace", "title": f"Session {number}"}

    agent.list_pages = [
        {"sessions": [row(1), row(2)], "nextCursor": "page-1"},
        {"sessions": [], "nextCursor": "page-2"},
        {"sessions": [row(3)]},
    ]
    async with fake_client(agent) as client:
        rows = [info async for info in client.list_sessions(cwd="/workspace")]
    assert [info.session_id for info in rows] == ["s-1", "s-2", "s-3"]
    assert agent.params_of("session/list") == [
        {"cwd": "/workspace"},
        {"cwd": "/workspace", "cursor": "page-1"},
        {"cwd": "/workspace", "cursor": "page-2"},
    ]


async def test_a_repeated_cursor_ends_the_listing_with_an_error() -> None:
    agent = FakeAgent()
    agent.list_pages = [{"sessions": [], "nextCursor": "page-0"}]

    async def drain() -> None:
        async for _info in client.list_sessions():
            pass

    async with fake_client(agent) as client:
        with pytest.raises(RpcError, match="repeated"):
            await drain()
    assert len(agent.params_of("session/list")) == 2


async def test_an_agent_error_keeps_its_code_message_and_data() -> None:
    agent = FakeAgent()
    agent.refuse["session/new"] = RpcError(INVALID_PARAMS, "cwd must be absolute", {"cwd": "x"})
    async with fake_client(agent) as client:
        with pytest.raises(AgentError) as caught:
            await client.new_session("relative")
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        INVALID_PARAMS,
        "cwd must be absolute",
        {"cwd": "x"},
    )


async def test_a_closed_session_receives_no_more_updates() -> None:
    agent = FakeAgent()
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        await client.close_session(session.session_id)
        assert session.closed
        assert client.sessions() == ()
        agent.refuse["session/prompt"] = RpcError(RESOURCE_NOT_FOUND, "session was closed")
        with pytest.raises(AgentError) as caught:
            await session.prompt_text("anyone there?")
    assert caught.value.code == RESOURCE_NOT_FOUND
    assert agent.params_of("session/close") == [{"sessionId": SESSION_ID}]


async def test_set_mode_updates_the_current_mode() -> None:
    agent = FakeAgent()
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        await session.set_mode("plan")
        assert session.current_mode_id == "plan"
    assert agent.params_of("session/set_mode") == [{"sessionId": SESSION_ID, "modeId": "plan"}]
