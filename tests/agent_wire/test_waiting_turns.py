"""A turn Muse kept waiting on the user when the session's host went away (an editor
restarted, another window): loading or resuming the session asks the user what Muse asks
again, the answer lets the turn complete, a prompt sent meanwhile is refused clearly, and
``session/cancel`` ends the turn."""

from __future__ import annotations

import json
from pathlib import Path

import acp
import anyio
import pytest

from .harness import WAIT, RecordingClient, World, make_world, running_agent
from .test_host_versions import FORMS, VERSIONS

pytestmark = pytest.mark.anyio

APPROVAL = "please list the files\nsim:approve ls -la"
"""A prompt whose turn waits on an approval; its reply echoes the first line."""


async def _left_waiting(world: World, text: str, fault: str) -> str:
    """A session whose turn asks the user and whose host ends right then (``fault``), with the
    agent that ran it stopped; returns the session's id."""
    world.extra_env["MUSE_SIM_FAULTS"] = fault
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError):
            await agent.prompt(session, text)
    del world.extra_env["MUSE_SIM_FAULTS"]
    return session


async def _load(agent: acp.ClientSideConnection, world: World, session: str) -> None:
    with anyio.fail_after(WAIT):
        await agent.load_session(session_id=session, cwd=str(world.workspace), mcp_servers=[])


class HeldClient(RecordingClient):
    """Holds each permission request until ``release`` is set; ``asked`` is set once the first
    one arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = anyio.Event()
        self.release = anyio.Event()
        self.on_permission = self._hold

    async def _hold(self) -> None:
        self.asked.set()
        await self.release.wait()


def _tool_statuses(client: RecordingClient, session: str) -> list[str]:
    return [
        str(u.status)
        for s, u in client.updates
        if s == session and u.session_update == "tool_call_update" and u.status
    ]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_loaded_session_asks_the_approval_muse_kept_and_the_turn_completes(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    session = await _left_waiting(world, APPROVAL, "exit:approval")
    async with running_agent(world) as agent:
        await _load(agent.conn, world, session)
        await agent.client.wait_until(lambda: "please list the files" in agent.client.text(session))
        statuses = _tool_statuses(agent.client, session)
        with anyio.fail_after(WAIT):
            after = await agent.prompt(session, "and now?")
    [asked] = agent.client.permission_requests
    assert asked.session_id == session
    assert "ls -la" in json.dumps(asked.tool_call.model_dump(mode="json"))
    [decided] = world.host_requests("approval/decide")
    assert decided["params"]["choiceId"] == "allow_once"
    assert statuses[-1] == "completed"
    assert after.stop_reason == "end_turn"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_resumed_session_asks_the_question_muse_kept_and_the_turn_completes(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    session = await _left_waiting(world, "sim:ask", "exit:userInput")
    async with running_agent(world, capabilities=FORMS) as agent:
        agent.client.answer_elicitations = True
        with anyio.fail_after(WAIT):
            await agent.conn.resume_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        await agent.client.wait_until(lambda: "You answered:" in agent.client.text(session))
    [form] = agent.client.elicitations
    [answer] = world.host_requests("userInput/answer")
    [question] = form["requestedSchema"]["properties"]
    assert answer["params"]["answers"][0]["questionId"] == question
    assert agent.client.text(session).count("You answered:") == 1


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_prompt_sent_while_the_kept_turn_waits_is_refused_saying_why(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    session = await _left_waiting(world, APPROVAL, "exit:approval")
    client = HeldClient()
    async with running_agent(world, client) as agent:
        await _load(agent.conn, world, session)
        with anyio.fail_after(WAIT):
            await client.asked.wait()
            with pytest.raises(acp.RequestError) as refused:
                await agent.prompt(session, "are you there?")
            client.release.set()
        await client.wait_until(lambda: "please list the files" in client.text(session))
        with anyio.fail_after(WAIT):
            after = await agent.prompt(session, "and now?")
    assert refused.value.code == -32600
    assert "waiting for your answer" in str(refused.value)
    assert "session/cancel" in str(refused.value)
    assert after.stop_reason == "end_turn"
    [start] = world.host_requests("turn/start")[-1:]
    assert start["params"]["input"][0]["text"] == "and now?"


@pytest.mark.parametrize("version", VERSIONS)
async def test_cancelling_ends_the_turn_muse_kept_waiting(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    session = await _left_waiting(world, APPROVAL, "exit:approval")
    client = HeldClient()
    async with running_agent(world, client) as agent:
        await _load(agent.conn, world, session)
        try:
            with anyio.fail_after(WAIT):
                await client.asked.wait()
                await agent.conn.cancel(session_id=session)
                # Admitted once the cancelled turn ended; Muse would queue it behind one it
                # still ran, and it would never end.
                after = await agent.prompt(session, "and now?")
        finally:
            client.release.set()
    [cancel] = world.host_requests("turn/cancel")
    assert cancel["params"]["sessionId"] == session
    assert world.host_requests("approval/decide") == []
    assert "please list the files" not in client.text(session)
    assert after.stop_reason == "end_turn"


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_next_prompt_asks_what_muse_kept_waiting_then_runs(
    tmp_path: Path, version: str
) -> None:
    """The session's host went away while its turn waited on an approval, in the same agent:
    the next prompt asks that approval again through itself, then runs its own turn."""
    world = make_world(tmp_path, version=version)
    world.extra_env["MUSE_SIM_FAULTS"] = "exit:approval"  # only a new approval ends a host
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            with pytest.raises(acp.RequestError):
                await agent.prompt(session, APPROVAL)
            after = await agent.prompt(session, "and now?")
    assert after.stop_reason == "end_turn"
    [decided] = world.host_requests("approval/decide")
    assert decided["params"]["choiceId"] == "allow_once"
    text = agent.client.text(session)
    assert text.index("please list the files") < text.index("and now?")
    assert _tool_statuses(agent.client, session)[-1] == "completed"
