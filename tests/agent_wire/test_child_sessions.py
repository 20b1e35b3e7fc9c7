"""Workflow children and subagents as child sessions, on every Muse version: for a client that
set ``subagents`` each child is announced on its parent with ``subagent_update``, listed by the
parent's card, and has a transcript of its own (what it was asked, its failure, its result),
which loads alone after a restart of muse-acp (and the parent's load announces it again);
``session/cancel`` on a running workflow child skips that child alone where Muse can (1.3.0 and
newer) and says why not elsewhere; ``/workflow`` retries a failed child. A
client without the opt-in sees only the card, which now lists each child's status. Every frame
validates against muse-acp's ACP bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import acp as sdk
import anyio
import pytest

from muse_acp_wire import acp

from .harness import WAIT, Agent, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

SUBAGENTS: Final[dict[str, Any]] = {"subagents": {}}
"""The client capabilities of a client that takes child sessions."""
STOPPABLE: Final = ("1.3.0", "1.4.2", "1.4.4", "1.4.13")
"""Muse versions that stop one workflow child (``workflow/childControl``)."""
PROMPT: Final = "sim:workflow-children Triage issues"


def _updates(agent: Agent, session: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Every ``session/update`` the agent sent, as (session id, update), checked against
    muse-acp's ACP bundle on the way."""
    found = []
    for direction, message in agent.frames:
        if direction == "in" and message.get("method") == "session/update":
            params = message["params"]
            ours = acp.SessionNotification.model_validate(params)
            assert ours.model_dump(mode="json", by_alias=True, exclude_unset=True) == params
            if session is None or params["sessionId"] == session:
                found.append((params["sessionId"], params["update"]))
    return found


def _announced(agent: Agent, parent: str) -> dict[str, dict[str, Any]]:
    """The latest ``subagent_update`` of each child of ``parent``, by child session id."""
    latest: dict[str, dict[str, Any]] = {}
    for _, update in _updates(agent, parent):
        if update["sessionUpdate"] == "subagent_update":
            latest[update["sessionId"]] = update
    return latest


def _child_failed(agent: Agent, parent: str) -> bool:
    return any(
        u["state"] == {"state": "idle", "stopReason": "error"}
        for u in _announced(agent, parent).values()
    )


def _card_text(agent: Agent, session: str) -> str:
    """The text of the latest card update of ``session`` that has text."""
    texts = [
        block["content"]["text"]
        for _, u in _updates(agent, session)
        if u["sessionUpdate"] in ("tool_call", "tool_call_update")
        for block in u.get("content") or []
        if block["type"] == "content"
    ]
    return texts[-1] if texts else ""


def _said(agent: Agent, child: str) -> list[tuple[str, str]]:
    return [
        (u["sessionUpdate"], u["content"]["text"])
        for _, u in _updates(agent, child)
        if "content" in u
    ]


async def _run_workflow(agent: Agent) -> tuple[str, dict[str, str]]:
    """A prompt starting the two-child workflow; waits until its second child failed. The
    session, and the child session ids by the title of the child."""
    session = await agent.new_session()
    with anyio.fail_after(WAIT):
        await agent.prompt(session, PROMPT)
    await agent.client.wait_until(lambda: _child_failed(agent, session))
    titles = {u["title"]: sid for sid, u in _announced(agent, session).items()}
    return session, titles


@pytest.mark.parametrize("version", VERSIONS)
async def test_workflow_children_are_child_sessions_listed_by_the_parents_card(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session, children = await _run_workflow(agent)
        first, second = children["Triage issues (first)"], children["Triage issues (second)"]
        cards = [u for _, u in _updates(agent, session) if u["sessionUpdate"] == "tool_call"]
        announced = _announced(agent, session)
        sent = _updates(agent)
    assert first.startswith(f"{session}~workflow~")
    assert second.startswith(f"{session}~workflow~")
    assert second != first
    linked = [c["sessionId"] for c in cards[0]["_meta"]["muse/children"]]
    assert linked == [first, second]
    assert announced[second]["state"] == {"state": "idle", "stopReason": "error"}
    assert announced[second]["capabilities"] == {}
    # Only a child Muse can stop on its own offers cancel.
    first_announced = next(u for s, u in sent if u.get("sessionId") == first)
    assert first_announced["state"] == {"state": "running"}
    assert ("cancel" in first_announced["capabilities"]) == (version in STOPPABLE)
    # Each child has its own transcript, announced on its parent before anything in its name.
    assert _said(agent, second) == [
        ("user_message_chunk", "Triage issues (second)"),
        ("agent_message_chunk", "Started."),
        ("agent_message_chunk", "It ended failed: tool_error."),
    ]
    positions = [i for i, (s, _) in enumerate(sent) if s == second]
    announce = next(i for i, (_, u) in enumerate(sent) if u.get("sessionId") == second)
    assert announce < positions[0]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_client_without_the_opt_in_sees_each_childs_status_on_the_card(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, PROMPT)

        await agent.client.wait_until(lambda: "failed, tool_error" in _card_text(agent, session))
        sent = _updates(agent)
    assert "- Triage issues (second): failed, tool_error" in _card_text(agent, session)
    assert {s for s, _ in sent} == {session}
    assert all(u["sessionUpdate"] != "subagent_update" for _, u in sent)


@pytest.mark.parametrize("version", STOPPABLE)
async def test_cancelling_a_child_session_skips_that_child_alone(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session, children = await _run_workflow(agent)
        first, second = children["Triage issues (first)"], children["Triage issues (second)"]
        await agent.conn.cancel(session_id=first)
        stopped = {"state": "idle", "stopReason": "cancelled"}
        await agent.client.wait_until(lambda: _announced(agent, session)[first]["state"] == stopped)
        announced = _announced(agent, session)
        with pytest.raises(sdk.RequestError) as refused:
            await agent.prompt(first, "and now this")
    assert refused.value.code == -32602
    assert "is a child session of" in str(refused.value)
    assert "send anything else to its parent" in str(refused.value)
    [control] = world.host_requests("workflow/childControl")
    assert control["params"]["childId"] == "child-1"
    assert control["params"]["action"] == "skip"
    assert control["params"]["attempt"] == 1
    assert control["params"]["sessionId"] == session
    assert announced[second]["state"] == {"state": "idle", "stopReason": "error"}
    assert not world.host_requests("workflow/cancel")
    assert not world.host_requests("turn/interrupt")


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1"])
async def test_cancelling_a_child_where_muse_cannot_says_why(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:workflow Audit the release notes")
        [child] = _announced(agent, session)
        await agent.conn.cancel(session_id=child)
        await agent.client.wait_until(lambda: "did not stop" in agent.client.text(session))
    assert f"this Muse ({version}) cannot stop one child of a workflow" in agent.client.text(
        session
    )
    assert not world.host_requests("workflow/childControl")


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_child_session_loads_with_its_own_transcript_after_a_restart(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session, children = await _run_workflow(agent)
    child = children["Triage issues (second)"]
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        await agent.conn.load_session(session_id=child, cwd=str(world.workspace), mcp_servers=[])
        sessions = {s for s, _ in _updates(agent)}
        loaded = _said(agent, child)
        with pytest.raises(sdk.RequestError) as raised:
            await agent.conn.load_session(
                session_id=f"{session}~workflow~nope~child-9",
                cwd=str(world.workspace),
                mcp_servers=[],
            )
        # The parent's history shows its children again, as they ended.
        await agent.conn.load_session(session_id=session, cwd=str(world.workspace), mcp_servers=[])
        replayed = _announced(agent, session)
    assert sessions == {child}, "only the child's own transcript is sent"
    assert set(replayed) == set(children.values())
    assert replayed[child]["state"] == {"state": "idle", "stopReason": "error"}
    assert loaded == [
        ("user_message_chunk", "Triage issues (second)"),
        ("agent_message_chunk", "Started."),
        ("agent_message_chunk", "It ended failed: tool_error."),
    ]
    assert raised.value.code == -32002
    assert "shows no workflow 'child-9'" in str(raised.value)


@pytest.mark.parametrize("version", STOPPABLE)
async def test_a_failed_child_is_retried_with_the_workflow_command(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session, children = await _run_workflow(agent)
        second = children["Triage issues (second)"]
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "/workflow")
            listed = agent.client.text(session)
            await agent.prompt(session, "/workflow retry triage issues (SECOND)")
        again = {"state": "idle", "stopReason": "end_turn"}
        await agent.client.wait_until(lambda: _announced(agent, session)[second]["state"] == again)
        replies = agent.client.text(session)
        said = _said(agent, second)
    assert "- Triage issues (second) (child-2): failed, tool_error" in listed
    assert "- Triage issues (first) (child-1): running" in listed
    assert "'Triage issues (second)' is being retried (attempt 1)" in replies
    [control] = world.host_requests("workflow/childControl")
    assert (control["params"]["action"], control["params"]["attempt"]) == ("retry", 1)
    assert said[-2:] == [
        ("agent_message_chunk", "Attempt 2 is running."),
        ("agent_message_chunk", "Attempt 2 completed."),
    ]


async def test_the_workflow_command_says_what_it_cannot_do(tmp_path: Path) -> None:
    world = make_world(tmp_path, version="1.4.4")
    async with running_agent(world) as agent:
        session, _ = await _run_workflow_plain(agent)
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "/workflow pause now")
            await agent.prompt(session, "/workflow retry Triage issues (first)")
            await agent.prompt(session, "/workflow skip nothing-like-it")
        replies = agent.client.text(session)
    assert "and /workflow pause or /workflow resume for the whole workflows" in replies
    assert "Only a failed child can be retried, and 'Triage issues (first)' is running" in replies
    assert "No child of a running workflow is called 'nothing-like-it'" in replies
    assert not world.host_requests("workflow/childControl")


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1"])
async def test_the_workflow_command_names_the_muse_it_needs(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:workflow Audit the release notes")
            await agent.prompt(session, "/workflow skip Audit the release notes")
        replies = agent.client.text(session)
    assert f"needs Muse 1.3.0 or newer, and this Muse is {version}" in replies
    assert not world.host_requests("workflow/childControl")


async def _run_workflow_plain(agent: Agent) -> tuple[str, None]:
    """The two-child workflow for a client without the opt-in, until its second child failed."""
    session = await agent.new_session()
    with anyio.fail_after(WAIT):
        await agent.prompt(session, PROMPT)

    await agent.client.wait_until(lambda: "failed, tool_error" in _card_text(agent, session))
    return session, None


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_subagent_is_a_child_session_with_its_own_transcript(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:subagent survey the failing tests")
            await agent.prompt(session, "sim:subagent-fails read the two crates")
        announced = _announced(agent, session)
        children = {u["title"]: sid for sid, u in announced.items()}
        survey, crates = children["survey the failing tests"], children["read the two crates"]
        await agent.conn.cancel(session_id=survey)
        await agent.client.wait_until(lambda: "did not stop" in agent.client.text(session))
    assert survey.startswith(f"{session}~subagent~")
    assert announced[survey]["state"] == {"state": "idle", "stopReason": "end_turn"}
    assert announced[crates]["state"] == {"state": "idle", "stopReason": "error"}
    assert all(u["capabilities"] == {} for u in announced.values())
    assert _said(agent, survey) == [
        ("user_message_chunk", "survey the failing tests"),
        ("agent_message_chunk", "Started."),
        ("agent_message_chunk", "It completed."),
        ("agent_message_chunk", "done: survey the failing tests"),
    ]
    assert _said(agent, crates)[-2:] == [
        ("agent_message_chunk", "It ended failed: provider_error."),
        ("agent_message_chunk", "could not finish: read the two crates"),
    ]
    told = agent.client.text(session)
    if version not in ("1.1.1", "1.2.1"):  # subagent/stop (1.3.0 on): this one has ended
        assert f"did not stop subagent {survey.rpartition('~')[2]!r}: it is not running" in told
    else:
        assert f"this Muse ({version}) cannot stop one subagent on its own" in told
