"""A prompt's turn as the client sees it: streamed text, tool cards, plans and failures."""

from __future__ import annotations

from pathlib import Path

import acp
import anyio
import pytest

from .harness import WAIT, World, failure_of, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio


async def test_a_plain_prompt_streams_the_echo_and_ends_the_turn(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "hello there")
    assert response.stop_reason == "end_turn"
    assert "hello there" in agent.client.text(session)
    kinds = agent.client.kinds(session)
    assert kinds.count("agent_message_chunk") >= 2, "the echo arrives as several deltas"
    assert "agent_thought_chunk" in kinds
    [start] = world.host_requests("turn/start")
    assert "reasoningEffort" not in start["params"], "the host's default effort needs no member"


async def test_a_bash_tool_call_becomes_a_card_with_truncated_output(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:bash 200000")
    assert response.stop_reason == "end_turn"
    cards = [u for s, u in agent.client.updates if s == session and u.session_update == "tool_call"]
    assert len(cards) == 1
    card = cards[0]
    assert card.kind == "execute"
    updates = [
        u
        for s, u in agent.client.updates
        if s == session and u.session_update == "tool_call_update"
    ]
    assert updates, "the card is updated as output arrives and when it completes"
    assert {u.tool_call_id for u in updates} == {card.tool_call_id}
    assert updates[-1].status == "completed"
    final_text = updates[-1].content[0].content.text
    assert "output-marker" in final_text
    assert len(final_text.encode()) < 70 * 1024, "card text stays bounded"
    assert "[Muse shortened this output before publishing it; the rest is not shown.]" in final_text
    assert "_meta" not in (updates[-1].model_dump(by_alias=True, exclude_none=True))


async def test_a_plan_becomes_a_plan_update(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:plan")
    plans = [u for s, u in agent.client.updates if s == session and u.session_update == "plan"]
    assert len(plans) == 1
    assert [e.status for e in plans[0].entries] == ["completed", "in_progress", "pending"]


async def test_a_failed_turn_is_an_error_with_failure_data(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.prompt(session, "sim:fail modelError")
    error = raised.value
    assert error.code == -32603
    assert failure_of(error)["kind"] == "modelError"
    assert failure_of(error)["source"] == "provider"


async def test_auth_failures_use_the_auth_required_code(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.prompt(session, "sim:fail authRequired")
    assert raised.value.code == -32000


async def test_a_prompt_on_an_unknown_session_is_not_found(world: World) -> None:
    async with running_agent(world) as agent:
        with pytest.raises(acp.RequestError) as raised:
            await agent.prompt("01a00000-0000-7000-8000-000000000000", "hi")
    assert raised.value.code == -32002


@pytest.mark.parametrize("version", VERSIONS)
async def test_after_a_host_death_mid_turn_the_next_prompt_works_as_the_error_says(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "a turn that completes")
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "sim:plan\nsim:crash")
        error = raised.value
        assert error.code == -32603
        assert failure_of(error)["kind"] == "hostExited"
        assert str(error).endswith(
            "Send the prompt again; muse-acp starts a new Muse host for this session."
        )
        with anyio.fail_after(WAIT):
            after = await agent.prompt(session, "after the crash")
        assert after.stop_reason == "end_turn"
        assert agent.client.text(session).endswith("after the crash")
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        assert "a turn that completes" in agent.client.text(session, "user_message_chunk")


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_host_that_goes_silent_fails_the_prompt_within_the_budget(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    world.extra_env["MUSE_ACP_SILENCE_TIMEOUT"] = "1"
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "sim:hold")
            after = await agent.prompt(session, "hello again")
    failure = failure_of(raised.value)
    assert (failure["kind"], failure["source"], failure["retryable"]) == (
        "hostSilent",
        "host",
        True,
    )
    assert "1 s" in str(raised.value)
    assert after.stop_reason == "end_turn"


async def test_a_host_that_keeps_reporting_is_never_silent(world: World) -> None:
    # Every event comes 0.3 s after the one before: the turn takes longer than the budget.
    world.extra_env.update(MUSE_ACP_SILENCE_TIMEOUT="1", MUSE_SIM_FAULTS="slow:300")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            started = anyio.current_time()
            response = await agent.prompt(session, "sim:stream 8")
            took = anyio.current_time() - started
    assert response.stop_reason == "end_turn"
    assert took > 1


async def test_a_user_thinking_over_a_permission_is_not_host_silence(world: World) -> None:
    world.extra_env["MUSE_ACP_SILENCE_TIMEOUT"] = "1"

    async def thinking() -> None:
        await anyio.sleep(3)  # the user reads the dialog for longer than the budget

    async with running_agent(world) as agent:
        agent.client.on_permission = thinking
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:approve make install")
    assert response.stop_reason == "end_turn"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_host_slower_to_attach_than_the_idle_timeout_still_runs_the_prompt(
    tmp_path: Path, version: str
) -> None:
    # The idle timer must not close a host while a turn is being prepared on it: here Muse
    # takes longer to attach the session than the agent lets an unused host idle.
    world = make_world(tmp_path, version=version)
    world.extra_env.update(
        MUSE_ACP_IDLE_TIMEOUT="0.3",
        MUSE_SIM_FAULTS="slow-ack:session/start,ack-delay:900",
    )
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "after a slow attach")
    assert response.stop_reason == "end_turn"
    assert "after a slow attach" in agent.client.text(session)
    assert len(world.session_hosts()) == 1, "one host served the prompt"
