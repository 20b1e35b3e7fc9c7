"""Approvals and questions: what the client is asked, and what reaches Muse in return."""

from __future__ import annotations

from pathlib import Path

import acp
import anyio
import pytest
from acp import schema

from .harness import WAIT, World, choose, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio


async def test_a_single_approval_asks_once_and_sends_the_chosen_host_choice(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:approve ls -la")
    assert response.stop_reason == "end_turn"
    [request] = agent.client.permission_requests
    assert request.session_id == session
    assert [o.kind for o in request.options][:1] == ["allow_once"]
    assert {o.kind for o in request.options} <= {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    }
    [decision] = world.host_requests("approval/decide")
    chosen = next(o.option_id for o in request.options if o.kind == "allow_once")
    assert decision["params"]["choiceId"] == chosen


async def test_a_multi_stage_approval_asks_once_per_stage_with_stage_titles(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:stages 3 make build")
    assert response.stop_reason == "end_turn"
    titles = [r.tool_call.title for r in agent.client.permission_requests]
    assert len(titles) == 3
    assert [(t or "").split(":")[0] for t in titles] == [
        "Stage 1 of 3",
        "Stage 2 of 3",
        "Stage 3 of 3",
    ]
    decisions = world.host_requests("approval/decide")
    assert [d["params"]["requirementId"]["sourceIndex"] for d in decisions] == [0, 1, 2]


async def test_rejecting_sends_a_host_deny_choice(world: World) -> None:
    client_policy = choose("reject_once")
    async with running_agent(world) as agent:
        agent.client.policy = client_policy
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:approve rm -rf /tmp/x")
    assert response.stop_reason == "end_turn"
    [decision] = world.host_requests("approval/decide")
    [request] = agent.client.permission_requests
    denied = next(o.option_id for o in request.options if o.kind == "reject_once")
    assert decision["params"]["choiceId"] == denied


async def test_auto_approve_mode_decides_without_asking(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.conn.set_session_mode(session_id=session, mode_id="autoApprove")
            response = await agent.prompt(session, "sim:stages 2 make test")
    assert response.stop_reason == "end_turn"
    assert agent.client.permission_requests == []
    assert len(world.host_requests("approval/decide")) == 2


async def test_a_question_without_form_support_is_withdrawn_and_said_in_the_chat(
    world: World,
) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:ask")
    # Muse carries on without an answer, as it decides; the user sees why it was not asked.
    assert response.stop_reason == "end_turn"
    assert "this ACP client cannot show question forms" in agent.client.text(session)
    assert len(world.host_requests("userInput/cancel")) == 1


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13"])
async def test_a_question_the_client_answers_with_an_error_is_withdrawn_naming_the_client(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    capabilities = schema.ClientCapabilities(
        elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
    )
    async with running_agent(world, capabilities=capabilities) as agent:
        session = await agent.new_session()
        agent.client.fail_elicitations = True
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:ask")
    assert response.stop_reason == "end_turn"
    assert "the client answered with error -32603" in agent.client.text(session)
    [cancel] = world.host_requests("userInput/cancel")
    assert "the ACP client sent answers that do not fit" in cancel["params"]["reason"]
    assert world.host_requests("userInput/answer") == []


async def test_a_question_is_answered_through_form_elicitation(world: World) -> None:
    capabilities = schema.ClientCapabilities(
        elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
    )
    async with running_agent(world, capabilities=capabilities) as agent:
        session = await agent.new_session()
        agent.client.answer_elicitations = True
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:ask")
    assert response.stop_reason == "end_turn"
    [form] = agent.client.elicitations
    [answer] = world.host_requests("userInput/answer")
    [question_id] = form["requestedSchema"]["properties"]
    first_label = form["requestedSchema"]["properties"][question_id]["enum"][0]
    assert answer["params"]["answers"] == [
        {"questionId": question_id, "selectedLabel": first_label}
    ]


async def test_a_declined_question_is_cancelled_and_the_turn_goes_on(world: World) -> None:
    capabilities = schema.ClientCapabilities(
        elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
    )
    async with running_agent(world, capabilities=capabilities) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:ask")
    assert response.stop_reason == "end_turn"
    assert len(agent.client.elicitations) == 1
    assert len(world.host_requests("userInput/cancel")) == 1


async def test_a_turn_muse_fails_after_a_withdrawn_question_names_the_client(
    world: World,
) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.prompt(session, "sim:ask\nsim:fail the model gave up")
    failure = failure_of(raised.value)
    assert (failure["kind"], failure["source"]) == ("userInputUnsupported", "client")
    assert "question" in str(raised.value)
    assert len(world.host_requests("userInput/cancel")) == 1
