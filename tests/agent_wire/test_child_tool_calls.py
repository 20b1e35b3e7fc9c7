"""A subagent's own tool calls, words and approvals in its child session, on every Muse
version: Muse keeps them in the subagent's own session, which muse-acp reads for a client that
set ``subagents`` and shows as the child's ``tool_call`` cards (tool name included), agent
messages and thoughts, in order (a result that repeats its last message is not said twice),
asking an approval Muse asks for the subagent (``subagentOrigin``, 1.3.0 on) in the child's
name and answering it on the parent; a ``session/load`` of the child after a restart replays
them too. A client without the opt-in sees the parent's card alone, is asked on the parent, and
muse-acp reads nothing of the child's session for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from .harness import WAIT, Agent, choose, make_world, running_agent
from .test_child_sessions import SUBAGENTS, _announced, _updates
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

ATTRIBUTED: Final = ("1.3.0", "1.4.2", "1.4.4", "1.4.13")
"""Muse versions whose declarations name the subagent an approval is for."""
PROMPT: Final = "sim:subagent-approve make lint"
RAN: Final = "simulated run of: make lint\n"
CANCELLED: Final = "tool approval cancelled"
THOUGHT: Final = "The parent session wants make lint run."
SAID: Final = ["Running make lint.", "make lint: approved"]
"""What the subagent says in its own session: its last message is the result it hands back."""
TRANSCRIPT: Final = [
    ("user_message_chunk", "run make lint"),
    ("agent_message_chunk", "Started."),
    ("agent_thought_chunk", THOUGHT),
    ("agent_message_chunk", SAID[0]),
    ("tool_call", "bash"),
    ("agent_message_chunk", SAID[1]),
    ("agent_message_chunk", "It completed."),
]
"""The child's transcript: what it was asked, its status lines and its own words and calls."""


def _cards(agent: Agent, session: str) -> list[dict[str, Any]]:
    return [
        u
        for _, u in _updates(agent, session)
        if u["sessionUpdate"] in ("tool_call", "tool_call_update")
    ]


def _messages(agent: Agent, session: str) -> list[str]:
    return [
        u["content"]["text"]
        for _, u in _updates(agent, session)
        if u["sessionUpdate"].endswith("message_chunk")
    ]


def _transcript(agent: Agent, session: str) -> list[tuple[str, str]]:
    """The session's messages, thoughts and new cards, in order: (kind, text or tool name)."""
    told = []
    for _, update in _updates(agent, session):
        kind = update["sessionUpdate"]
        if kind.endswith("_chunk"):
            told.append((kind, update["content"]["text"]))
        elif kind == "tool_call":
            told.append((kind, update["name"]))
    return told


def _texts(card: dict[str, Any]) -> list[str]:
    return [b["content"]["text"] for b in card.get("content") or [] if b["type"] == "content"]


def _position(agent: Agent, holds: Any) -> int:
    """The index of the first frame the agent sent the client that ``holds``."""
    return next(i for i, (d, m) in enumerate(agent.frames) if d == "in" and holds(m))


async def _run(agent: Agent) -> tuple[str, str]:
    """The prompt whose subagent runs ``make lint``; the session and the child session."""
    session = await agent.new_session()
    with anyio.fail_after(WAIT):
        await agent.prompt(session, PROMPT)
    return session, next(iter(_announced(agent, session)))


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_subagents_tool_call_and_its_approval_are_the_child_sessions(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session, child = await _run(agent)
        cards, parent_cards = _cards(agent, child), _cards(agent, session)
        asked = agent.client.permission_requests
        said = _messages(agent, child)
        call_id = cards[0]["toolCallId"]
        first_card = _position(
            agent, lambda m: m.get("params", {}).get("update", {}).get("toolCallId") == call_id
        )
        started = _position(agent, lambda m: "Started." in str(m.get("params")))
        completed = _position(agent, lambda m: "It completed." in str(m.get("params")))
        listed = await agent.conn.list_sessions(cwd=str(world.workspace))
    assert child.startswith(f"{session}~subagent~")
    assert [s.session_id for s in listed.sessions] == [session], "a subagent's is no session"
    first = cards[0]
    assert (first["sessionUpdate"], first["name"], first["kind"]) == (
        "tool_call",
        "bash",
        "execute",
    )
    assert first["rawInput"]["command"] == "make lint"
    assert cards[-1]["status"] == "completed"
    assert _texts(cards[-1]) == [RAN]
    # The parent shows its subagent's card alone; the call is the child's.
    assert {c["name"] for c in parent_cards} == {"subagent"}
    assert started < first_card < completed, "the call is told between the child's start and end"
    assert said == ["run make lint", "Started.", *SAID, "It completed."]
    if version in ATTRIBUTED:
        [request] = asked
        assert request.session_id == child
        assert request.tool_call.tool_call_id == call_id
        assert request.tool_call.title == first["title"]
        asking = _position(agent, lambda m: m.get("method") == "session/request_permission")
        assert first_card < asking, "the card is shown in the child before it is asked about"
        [decide] = world.host_requests("approval/decide")
        assert decide["params"]["sessionId"] == session  # answered on Muse's parent session
        assert decide["params"]["choiceId"] == "allow_once"
    else:  # no way declared to say whose approval it is: Muse's subagent runs it unasked
        assert not asked
        assert not world.host_requests("approval/decide")


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_client_without_the_opt_in_sees_the_parents_card_and_is_asked_there(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, PROMPT)
        sent = _updates(agent)
        cards = _cards(agent, session)
        told = {text for _, text in _transcript(agent, session)}
        asked = agent.client.permission_requests
    assert {s for s, _ in sent} == {session}
    assert all(u["sessionUpdate"] != "subagent_update" for _, u in sent)
    assert {c["name"] for c in cards} == {"subagent"}
    assert (cards[-1]["status"], _texts(cards[-1])) == ("completed", ["make lint: approved"])
    assert not told & {THOUGHT, SAID[0]}, "the subagent's own words are not the parent's"
    pages = [r["params"]["sessionId"] for r in world.host_requests("view/page")]
    assert pages == [], "nothing of the child's session is read for this client"
    if version in ATTRIBUTED:
        [request] = asked
        assert request.session_id == session
        assert request.tool_call.raw_input == {
            "command": "make lint",
            "description": "Run a command the parent session delegated",
        }
        [decide] = world.host_requests("approval/decide")
        assert decide["params"]["sessionId"] == session
    else:
        assert not asked


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_subagent_child_session_loads_with_its_tool_calls_after_a_restart(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        _, child = await _run(agent)
        live = _cards(agent, child)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        await agent.conn.load_session(session_id=child, cwd=str(world.workspace), mcp_servers=[])
        sessions = {s for s, _ in _updates(agent)}
        loaded = [(u["sessionUpdate"], u) for _, u in _updates(agent, child)]
    assert sessions == {child}
    kinds = [kind for kind, _ in loaded]
    cards = [u for kind, u in loaded if kind in ("tool_call", "tool_call_update")]
    assert cards[0]["name"] == "bash"
    assert cards[0]["toolCallId"] == live[0]["toolCallId"]
    assert cards[0]["rawInput"]["command"] == "make lint"
    assert (cards[-1]["status"], _texts(cards[-1])) == ("completed", [RAN])
    texts = [u["content"]["text"] for kind, u in loaded if kind.endswith("message_chunk")]
    assert texts == ["run make lint", "Started.", *SAID, "It completed."]
    # Its calls are told after it started and before it ended, as they happened.
    assert kinds.index("tool_call") == 4
    assert kinds[kinds.index("tool_call") :].count("agent_message_chunk") == 2


@pytest.mark.parametrize("version", ATTRIBUTED)
async def test_a_subagents_command_declined_in_its_child_session_ends_there(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        agent.client.policy = choose("reject_once")
        session, child = await _run(agent)
        cards, parent_cards = _cards(agent, child), _cards(agent, session)
        said = _messages(agent, child)
    [decide] = world.host_requests("approval/decide")
    assert (decide["params"]["sessionId"], decide["params"]["choiceId"]) == (session, "abort")
    assert cards[-1]["status"] == "failed"
    assert _texts(cards[-1]) == [f"{CANCELLED}\n\n[Not completed: failed.]"]
    assert {c["name"] for c in parent_cards} == {"subagent"}
    assert said[-2:] == ["make lint: abort", "It completed."]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_subagents_own_words_are_its_child_sessions_live_and_after_a_restart(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session, child = await _run(agent)
        live = _transcript(agent, child)
        parent = _transcript(agent, session)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        await agent.conn.load_session(session_id=child, cwd=str(world.workspace), mcp_servers=[])
        loaded = _transcript(agent, child)
    assert live == TRANSCRIPT
    assert loaded == TRANSCRIPT
    # Its words are the child's: the parent's transcript has none of them.
    assert not {text for _, text in parent} & {THOUGHT, *SAID}
