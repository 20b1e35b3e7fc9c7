"""Child session ids name their parent and Muse's ids of the child, and read back after any
restart; a subagent's item becomes a card linking its child session, a ``subagent_update`` that
offers cancel only where its host stops a subagent (``subagent/stop``) and a transcript of its
own: what it was asked, its end and what it handed back."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from muse_acp.agent.cards.child_sessions import ChildRef, child_session_id, parse_child_id
from muse_acp.agent.translation.child_tool_calls import ChildToolCalls
from muse_acp.agent.translation.child_transcripts import ChildUpdate
from muse_acp.agent.translation.translate import TurnTranslator
from muse_acp_wire import acp, msp

PARENT = "0198f0aa-1111-7000-8000-0000000000aa"


@pytest.mark.parametrize(
    "ref",
    [
        ChildRef(PARENT, "subagent", "subagent-a"),
        ChildRef(PARENT, "workflow", "c~1/%x y", "wfr~0198/f0af"),
    ],
)
def test_a_child_id_reads_back_as_the_child_it_names(ref: ChildRef) -> None:
    session_id = ref.session_id
    assert session_id.count("~") == (2 if ref.kind == "subagent" else 3)
    assert parse_child_id(session_id) == ref


@pytest.mark.parametrize(
    "session_id",
    [
        PARENT,
        f"{PARENT}~subagent",
        f"{PARENT}~task~x",
        f"{PARENT}~workflow~only-one",
        "bad id~subagent~x",
        f"{PARENT}~subagent~",
        child_session_id(PARENT, "subagent", "x" * 600),
    ],
)
def test_other_ids_are_no_child(session_id: str) -> None:
    assert parse_child_id(session_id) is None


def _said(updates: list[Any]) -> list[tuple[str, str]]:
    """The (child session, text) of each child transcript update among ``updates``."""
    found = []
    for update in updates:
        if isinstance(update, ChildUpdate):
            dumped = update.update.model_dump(mode="json", by_alias=True)
            found.append((update.session_id, dumped["content"]["text"]))
    return found


def _subagent(revision: int, status: str, **members: Any) -> msp.ItemEventParams:
    item = {
        "itemId": "i-1",
        "turnId": "t-1",
        "revision": revision,
        "status": status,
        "kind": "subagent",
        "subagentId": "subagent-a",
        "agentPath": ".agents/researcher.md",
        "role": "worker",
        "depth": 1,
        "objective": "survey the failing tests",
        **members,
    }
    return msp.ItemEventParams.model_validate(
        {"sessionId": PARENT, "item": item, "viewCursor": "v:1"}
    )


def test_a_subagent_is_a_child_session_with_its_own_transcript() -> None:
    translator = TurnTranslator(
        session_id=PARENT, turn_id="t-1", stoppable_children=frozenset({"workflow"})
    )
    child = child_session_id(PARENT, "subagent", "subagent-a")
    started = translator.updates("item/started", _subagent(1, "inProgress"))
    result = {"summary": "two failures share a fixture", "artifactRefs": [], "evidenceRefs": []}
    ended = translator.updates("item/completed", _subagent(2, "completed", result=result))
    card, announce, *transcript = started
    assert isinstance(card, acp.ToolCallSessionUpdate)
    assert card.field_meta == {
        "muse/children": [
            {"sessionId": child, "title": "survey the failing tests", "status": "inProgress"}
        ]
    }
    assert isinstance(announce, acp.SubagentUpdateSessionUpdate)
    assert announce.session_id == child
    assert announce.capabilities == acp.SubagentSessionCapabilities()
    assert announce.state == acp.RunningStateUpdate(state="running")
    assert announce.description == "worker"
    assert _said(transcript) == [(child, "survey the failing tests"), (child, "Started.")]
    _, done, *said = ended
    assert isinstance(done, acp.SubagentUpdateSessionUpdate)
    assert done.state == acp.IdleStateUpdate(state="idle", stop_reason="end_turn")
    assert _said(said) == [(child, "It completed."), (child, "two failures share a fixture")]
    # The parent's own updates never carry a child's transcript.
    assert all(
        not isinstance(u, ChildUpdate)
        for u in translator.on_notification(
            "item/updated", _subagent(3, "completed", result={**result, "summary": "later"})
        )
    )


RESULT = {"summary": "two failures share a fixture", "artifactRefs": [], "evidenceRefs": []}


@pytest.mark.parametrize(
    ("last_said", "handed_back"),
    [
        ("two failures share a fixture", []),
        ("Looking at the tests.", ["two failures share a fixture"]),
        (None, ["two failures share a fixture"]),
    ],
)
def test_a_result_is_said_unless_the_childs_own_session_said_it_last(
    last_said: str | None, handed_back: list[str]
) -> None:
    translator = TurnTranslator(session_id=PARENT, turn_id="t-1")
    child = child_session_id(PARENT, "subagent", "subagent-a")
    translator.children.own_words = {child: last_said}.get
    translator.updates("item/started", _subagent(1, "inProgress"))
    ended = translator.updates("item/completed", _subagent(2, "completed", result=RESULT))
    said = [u for u in ended if isinstance(u, ChildUpdate)]
    assert _said(said) == [(child, "It completed."), *((child, text) for text in handed_back)]
    assert [u.handed_back for u in said] == [False, *(True for _ in handed_back)]


def _item_event(cursor: str, item: dict[str, Any]) -> msp.ViewEvent:
    common = {"turnId": "t-9", "revision": 1, "status": "completed"}
    params = {"sessionId": "muse-child", "viewCursor": cursor, "item": {**common, **item}}
    return msp.ViewEvent(method="item/completed", params=params)


def test_a_subagents_own_session_gives_its_words_and_knows_its_last_message() -> None:
    calls = ChildToolCalls(PARENT)
    child = calls.note("subagent-a", "muse-child")
    page = msp.ViewPageResult(
        events=[
            _item_event("v:1", {"itemId": "r-1", "kind": "reasoning", "summary": ["Hm."]}),
            _item_event("v:2", {"itemId": "m-1", "kind": "agentMessage", "text": "Looking."}),
            _item_event("v:3", {"itemId": "m-2", "kind": "agentMessage", "text": "Found it."}),
        ],
        next_cursor=None,
    )

    async def read_page(params: msp.ViewPageParams) -> msp.ViewPageResult:
        assert params.session_id == "muse-child"
        return page

    updates = anyio.run(calls.catch_up, child, read_page)
    assert [(u.session_id, u.update.session_update) for u in updates] == [
        (child, "agent_thought_chunk"),
        (child, "agent_message_chunk"),
        (child, "agent_message_chunk"),
    ]
    assert _said(updates) == [(child, "Hm."), (child, "Looking."), (child, "Found it.")]
    assert calls.last_said(child) == "Found it."

    def line(text: str, *, handed_back: bool = True) -> ChildUpdate:
        content = acp.TextContentBlock(type="text", text=text)
        chunk = acp.AgentMessageChunkSessionUpdate(
            session_update="agent_message_chunk", content=content, message_id="x"
        )
        return ChildUpdate(child, chunk, "muse-child", handed_back)

    assert calls.repeats(line("Found it."))
    assert not calls.repeats(line("Looking."))
    assert not calls.repeats(line("Found it.", handed_back=False))
