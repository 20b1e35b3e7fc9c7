"""How ``Session.prompt`` streams a turn's updates: order, completeness, pace and failures."""

from __future__ import annotations

import logging

import anyio
import pytest

from muse_acp.client import AgentError, Session, message_text
from muse_acp.rpc import INTERNAL_ERROR, JsonObject, RpcError
from muse_acp_wire import acp

from .fake_agent import WAIT, FakeAgent, fake_client, text_chunk

pytestmark = pytest.mark.anyio


def texts(updates: list[acp.SessionUpdate]) -> list[str | None]:
    return [message_text(update) for update in updates]


async def test_every_update_sent_before_the_response_is_yielded_in_order_before_the_end() -> None:
    agent = FakeAgent()

    async def script(agent: FakeAgent, session_id: str) -> str:
        for index in range(200):
            await agent.send_update(session_id, text_chunk(f"{index},"))
        await agent.send_update(session_id, {"sessionUpdate": "plan", "entries": []})
        return "max_tokens"

    agent.prompt_script = script
    async with fake_client(agent, max_buffered_updates=4) as client:
        session = await client.new_session("/workspace")
        updates = [update async for update in session.prompt("count")]

    assert texts(updates[:-1]) == [f"{index}," for index in range(200)]
    assert isinstance(updates[-1], acp.PlanSessionUpdate)
    assert session.stop_reason == "max_tokens"


async def test_prompt_text_joins_the_agent_message_chunks_and_skips_other_updates() -> None:
    agent = FakeAgent()

    async def script(agent: FakeAgent, session_id: str) -> str:
        await agent.send_update(session_id, text_chunk("Hello, "))
        thought: JsonObject = {
            "sessionUpdate": "agent_thought_chunk",
            "content": {"type": "text", "text": "hm"},
        }
        await agent.send_update(session_id, thought)
        await agent.send_update(session_id, text_chunk("world."))
        return "end_turn"

    agent.prompt_script = script
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        assert await session.prompt_text("greet") == "Hello, world."
    assert agent.params_of("session/prompt") == [
        {"sessionId": "fake-session-1", "prompt": [{"type": "text", "text": "greet"}]}
    ]


async def test_unknown_and_invalid_updates_are_skipped_and_the_prompt_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = FakeAgent()

    async def script(agent: FakeAgent, session_id: str) -> str:
        await agent.send_update(session_id, text_chunk("before"))
        await agent.send_update(session_id, {"sessionUpdate": "hologram", "depth": 3})
        await agent.send_update(session_id, {"sessionUpdate": "agent_message_chunk"})
        await agent.send_update(session_id, {"noTag": True})
        await agent.send_update(session_id, text_chunk("after"))
        return "end_turn"

    agent.prompt_script = script
    caplog.set_level(logging.DEBUG, logger="muse_acp.client")
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        updates = [update async for update in session.prompt("go")]

    assert texts(updates) == ["before", "after"]
    assert session.stop_reason == "end_turn"
    messages = [record.getMessage() for record in caplog.records]
    assert any("unknown kind 'hologram'" in message for message in messages)
    assert any("invalid agent_message_chunk update" in message for message in messages)


async def test_a_slow_reader_holds_the_agent_back_and_loses_nothing() -> None:
    agent = FakeAgent()
    total = 60

    async def script(agent: FakeAgent, session_id: str) -> str:
        for index in range(total):
            await agent.send_update(session_id, text_chunk(str(index)))
        return "end_turn"

    agent.prompt_script = script
    async with fake_client(agent, transport_buffer=1, max_buffered_updates=2) as client:
        session = await client.new_session("/workspace")
        stream = session.prompt("flood")
        first = await anext(stream)
        await anyio.wait_all_tasks_blocked()
        held_back_at = agent.updates_sent
        rest = [update async for update in stream]

    assert held_back_at < 12
    assert texts([first, *rest]) == [str(index) for index in range(total)]
    assert agent.updates_sent == total


async def test_a_failed_prompt_raises_the_agents_error_after_the_updates_it_sent() -> None:
    agent = FakeAgent()

    async def script(agent: FakeAgent, session_id: str) -> str:
        await agent.send_update(session_id, text_chunk("partial"))
        raise RpcError(INTERNAL_ERROR, "the host went away", {"failure": {"kind": "hostExited"}})

    agent.prompt_script = script
    received: list[acp.SessionUpdate] = []

    async def consume(session: Session) -> None:
        async for update in session.prompt("go"):
            received.append(update)

    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        with pytest.raises(AgentError) as caught:
            await consume(session)

    assert texts(received) == ["partial"]
    assert caught.value.code == INTERNAL_ERROR
    assert caught.value.message == "the host went away"
    assert caught.value.data == {"failure": {"kind": "hostExited"}}
    assert session.stop_reason is None


async def test_leaving_the_loop_early_cancels_the_turn() -> None:
    agent = FakeAgent()
    cancelled = anyio.Event()

    async def script(agent: FakeAgent, session_id: str) -> str:
        await agent.send_update(session_id, text_chunk("first"))
        await agent.wait_for_notification("session/cancel")
        cancelled.set()
        return "cancelled"

    agent.prompt_script = script
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        stream = session.prompt("long job")
        assert message_text(await anext(stream)) == "first"
        await stream.aclose()
        with anyio.fail_after(WAIT):
            await cancelled.wait()

    assert ("session/cancel", {"sessionId": "fake-session-1"}) in agent.notifications


async def test_a_new_prompt_cancels_the_running_turn_and_starts_once_it_ended() -> None:
    agent = FakeAgent()
    calls: list[str] = []

    async def script(agent: FakeAgent, session_id: str) -> str:
        calls.append("start")
        if len(calls) == 1:
            await agent.send_update(session_id, text_chunk("working"))
            await agent.wait_for_notification("session/cancel")
            calls.append("cancelled")
            return "cancelled"
        await agent.send_update(session_id, text_chunk("replacement"))
        return "end_turn"

    agent.prompt_script = script
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        first = session.prompt("first")
        assert message_text(await anext(first)) == "working"
        assert await session.prompt_text("second") == "replacement"
        assert [update async for update in first] == []
    assert calls == ["start", "cancelled", "start"]
    assert [name for name, _params in agent.notifications] == ["session/cancel"]


async def test_cancel_sends_session_cancel_for_the_session() -> None:
    agent = FakeAgent()
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        await session.cancel()
        assert await agent.wait_for_notification("session/cancel") == {
            "sessionId": "fake-session-1"
        }


async def test_breaking_out_of_the_loop_cancels_the_turn_and_the_next_prompt_waits_for_it() -> None:
    agent = FakeAgent()
    calls: list[str] = []

    async def script(agent: FakeAgent, session_id: str) -> str:
        calls.append("start")
        if len(calls) == 1:
            await agent.send_update(session_id, text_chunk("first"))
            await agent.wait_for_notification("session/cancel")
            calls.append("cancelled")
            return "cancelled"
        await agent.send_update(session_id, text_chunk("second"))
        return "end_turn"

    agent.prompt_script = script
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        async for _update in session.prompt("long job"):
            break
        assert await session.prompt_text("next job") == "second"
    assert calls == ["start", "cancelled", "start"]
    assert session.stop_reason == "end_turn"
