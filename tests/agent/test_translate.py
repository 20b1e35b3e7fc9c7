"""The turn translator: MSP notifications of a turn in, ACP session updates out."""

from __future__ import annotations

import itertools
import json
import logging
import tracemalloc
from typing import Any, Final

import pytest
from hypothesis import given, settings, strategies as st

from muse_acp.agent.cards.file_changes import FileBefore
from muse_acp.agent.cards.output_cards import OutputPolicy
from muse_acp.agent.cards.progress import CARD_TEXT_LIMIT_BYTES
from muse_acp.agent.translation.child_transcripts import ChildUpdate
from muse_acp.agent.translation.translate import PlainChunk, TurnTranslator
from muse_acp.agent.translation.usage import WindowUse
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

SESSION: Final = "sess-1"
TURN: Final = "turn-1"
ENVELOPE: Final = {"sessionId": "host-sess", "viewCursor": "v:host-sess:1"}
MIB: Final = 1024 * 1024

Event = tuple[str, dict[str, Any]]


def _wire(update: acp.SessionUpdate) -> dict[str, Any]:
    dumped = update.model_dump(mode="json", by_alias=True, exclude_unset=True)
    parsed = acp.SessionNotification.model_validate({"sessionId": SESSION, "update": dumped})
    assert parsed.update.model_dump(mode="json", by_alias=True, exclude_unset=True) == dumped
    return dumped


def _params(method: str, params: dict[str, Any]) -> WireModel:
    spec = msp.CLIENT_NOTIFICATIONS[method]
    assert spec.params is not None
    return spec.params.model_validate(params)


def _feed(translator: TurnTranslator, *events: Event) -> list[dict[str, Any]]:
    return [
        _wire(update)
        for method, params in events
        for update in translator.on_notification(method, _params(method, params))
    ]


def _live(turn_id: str | None = TURN) -> TurnTranslator:
    return TurnTranslator(session_id=SESSION, turn_id=turn_id)


def _replay() -> TurnTranslator:
    return TurnTranslator(session_id=SESSION, replay=True)


def started(item: dict[str, Any]) -> Event:
    return ("item/started", {**ENVELOPE, "item": item})


def updated(item: dict[str, Any]) -> Event:
    return ("item/updated", {**ENVELOPE, "item": item})


def completed(item: dict[str, Any]) -> Event:
    return ("item/completed", {**ENVELOPE, "item": item})


def delta(item_id: str, text: str, field: str = "text") -> Event:
    return ("item/delta", {**ENVELOPE, "itemId": item_id, "field": field, "delta": text})


def _item(kind: str, item_id: str, revision: int, status: str, **members: Any) -> dict[str, Any]:
    base = {"itemId": item_id, "kind": kind, "turnId": TURN, "revision": revision}
    return {**base, "status": status, **members}


def message(
    text: str, revision: int = 2, status: str = "completed", **members: Any
) -> dict[str, Any]:
    return _item("agentMessage", "msg-1", revision, status, text=text, **members)


def reasoning(parts: list[str], revision: int = 2, status: str = "completed") -> dict[str, Any]:
    return _item("reasoning", "rs-1", revision, status, summary=parts)


def tool(revision: int, status: str, **members: Any) -> dict[str, Any]:
    args = '{"command": "make", "description": "Build"}'
    return _item(
        "toolCall", "tool-1", revision, status, tool="bash", callId="call-1", args=args, **members
    )


def said(text: str) -> dict[str, Any]:
    return {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
        "messageId": "msg-1",
    }


def thought(text: str) -> dict[str, Any]:
    return {
        "sessionUpdate": "agent_thought_chunk",
        "content": {"type": "text", "text": text},
        "messageId": "rs-1",
    }


def _text(update: dict[str, Any]) -> str:
    return "".join(
        block["content"]["text"] for block in update["content"] if block["type"] == "content"
    )


def test_message_deltas_are_sent_as_they_come_and_the_snapshot_adds_only_the_rest() -> None:
    updates = _feed(
        _live(),
        started(message("", revision=1, status="inProgress")),
        delta("msg-1", "Hel"),
        delta("msg-1", "lo"),
        completed(message("Hello world")),
    )
    assert updates == [said("Hel"), said("lo"), said(" world")]


@pytest.mark.parametrize("replay", [False, True])
def test_updates_leave_text_chunks_plain_and_otherwise_say_what_on_notification_says(
    replay: bool,
) -> None:
    user = _item("userMessage", "user-1", 1, "completed", text="Do it")
    events = (
        completed(user),
        started(reasoning([""], revision=1, status="inProgress")),
        delta("rs-1", "think", field="summary.0"),
        delta("rs-1", "ing", field="summary.1"),
        started(message("", revision=1, status="inProgress")),
        delta("msg-1", "Hel"),
        started(tool(1, "inProgress")),
        delta("tool-1", "." * 2048, field="output"),
        completed(tool(2, "completed", visibleOutput="done")),
        completed(message("Hello world")),
    )
    modelled = TurnTranslator(session_id=SESSION, turn_id=TURN, replay=replay)
    plain = TurnTranslator(session_id=SESSION, turn_id=TURN, replay=replay)
    expected: list[acp.SessionUpdate] = []
    got: list[acp.SessionUpdate] = []
    chunks = 0
    for method, params in events:
        expected += modelled.on_notification(method, _params(method, params))
        for update in plain.updates(method, _params(method, params)):
            if isinstance(update, ChildUpdate):  # a child session's, not this session's
                continue
            if isinstance(update, PlainChunk):
                chunks += 1
                update = update.model()
            elif isinstance(update, WindowUse):
                update = update.model()
            got.append(update)
    assert [_wire(update) for update in got] == [_wire(update) for update in expected]
    # Every text chunk came plain: thoughts, message text, and in replay the user's prompt.
    assert chunks == sum(_wire(update)["sessionUpdate"].endswith("_chunk") for update in expected)
    assert chunks == (5 if replay else 4)


def test_a_snapshot_matching_what_was_sent_adds_nothing() -> None:
    updates = _feed(
        _live(),
        started(message("", revision=1, status="inProgress")),
        delta("msg-1", "Hello"),
        updated(message("Hello", revision=2, status="inProgress")),
        delta("msg-1", "!"),
        completed(message("Hello!", revision=3)),
    )
    assert updates == [said("Hello"), said("!")]


def test_a_message_completed_without_deltas_is_sent_once_in_full() -> None:
    translator = _live()
    assert _feed(translator, completed(message("All done."))) == [said("All done.")]
    assert _feed(translator, completed(message("All done."))) == []
    assert _feed(translator, delta("msg-1", "late")) == []


def test_a_divergent_snapshot_sends_nothing_more_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    translator = _live()
    with caplog.at_level(logging.DEBUG, logger="muse_acp.agent"):
        updates = _feed(
            translator,
            started(message("", revision=1, status="inProgress")),
            delta("msg-1", "Hello"),
            updated(message("Goodbye", revision=2, status="inProgress")),
            delta("msg-1", " there"),
            completed(message("Goodbye there", revision=3)),
        )
    assert updates == [said("Hello")]
    assert [record.levelno for record in caplog.records] == [logging.DEBUG]
    assert "msg-1" in caplog.records[0].getMessage()


def test_a_snapshot_shorter_than_what_was_sent_counts_as_divergent() -> None:
    updates = _feed(
        _live(),
        started(message("", revision=1, status="inProgress")),
        delta("msg-1", "Hello"),
        completed(message("Hell")),
    )
    assert updates == [said("Hello")]


@pytest.mark.parametrize("event", [delta("msg-1", ""), delta("msg-1", "out", field="output")])
def test_empty_deltas_and_deltas_of_other_fields_send_nothing(event: Event) -> None:
    translator = _live()
    _feed(translator, started(message("", revision=1, status="inProgress")))
    assert _feed(translator, event) == []


def test_a_delta_naming_no_field_is_read_and_its_text_comes_with_the_snapshot() -> None:
    # Muse's declarations make ``field`` optional: such a delta must not be refused (which
    # would drop it with a warning) and extends no stream, so the snapshot brings the text.
    fieldless = ("item/delta", {**ENVELOPE, "itemId": "msg-1", "delta": "Hel"})
    updates = _feed(
        _live(),
        started(message("", revision=1, status="inProgress")),
        fieldless,
        delta("msg-1", "Hello"),
        completed(message("Hello world")),
    )
    assert updates == [said("Hello"), said(" world")]


def test_reasoning_parts_become_thoughts_separated_by_a_blank_line() -> None:
    updates = _feed(
        _live(),
        started(reasoning([], revision=1, status="inProgress")),
        delta("rs-1", "Plan the work", field="summary.0"),
        delta("rs-1", "Check", field="summary.1"),
        completed(reasoning(["Plan the work", "Check the tests"])),
    )
    assert updates == [thought("Plan the work"), thought("\n\nCheck"), thought(" the tests")]


def test_reasoning_completed_without_deltas_sends_each_part_once() -> None:
    translator = _live()
    assert _feed(translator, completed(reasoning(["First.", "", "Second."]))) == [
        thought("First."),
        thought("\n\nSecond."),
    ]
    assert _feed(translator, completed(reasoning(["First.", "", "Second."], revision=3))) == []


@pytest.mark.parametrize("field", ["summary.500", "summary.x", "summary.-1", "summary.", "text"])
def test_reasoning_deltas_outside_the_summary_parts_are_ignored(field: str) -> None:
    translator = _live()
    _feed(translator, started(reasoning([], revision=1, status="inProgress")))
    assert _feed(translator, delta("rs-1", "secret", field=field)) == []


def test_stale_and_equal_revisions_are_ignored() -> None:
    translator = _live()
    first = _feed(
        translator,
        started(tool(1, "inProgress")),
        updated(tool(3, "inProgress", visibleOutput="b")),
    )
    assert [update["sessionUpdate"] for update in first] == ["tool_call", "tool_call_update"]
    assert _feed(translator, updated(tool(2, "inProgress", visibleOutput="a"))) == []
    assert _feed(translator, completed(tool(3, "completed", visibleOutput="c"))) == []
    assert _feed(
        translator, completed(message("x", revision=2)), updated(message("xy", revision=1))
    ) == [said("x")]


def test_a_tool_completed_without_a_start_is_announced_once_as_finished() -> None:
    assert _feed(_live(), completed(tool(2, "completed", visibleOutput="built"))) == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call-1",
            "name": "bash",
            "title": "Build",
            "kind": "execute",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "built"}}],
            "rawInput": {"command": "make", "description": "Build"},
        }
    ]


def write(revision: int, status: str, path: str = "a.txt", **members: Any) -> dict[str, Any]:
    args = json.dumps({"content": "new\n", "path": path})
    return _item(
        "toolCall",
        "w-1",
        revision,
        status,
        tool="write_file",
        callId="call-w",
        args=args,
        **members,
    )


def test_an_unseen_running_tool_call_is_named_before_its_card_is_shown() -> None:
    translator = _live()
    first = _params(*started(write(1, "inProgress")))
    assert translator.unseen_tool(first) == ("call-w", "write_file", write(1, "x")["args"])
    _feed(translator, started(write(1, "inProgress")))
    assert translator.unseen_tool(_params(*updated(write(2, "inProgress")))) is None


@pytest.mark.parametrize(
    "event",
    [
        completed(write(2, "completed")),  # it ran already: reading now would see the new text
        started({**write(1, "inProgress"), "turnId": "turn-0"}),
        started(message("hi", 1, "inProgress")),
        delta("w-1", "out", "output"),
    ],
)
def test_no_file_is_read_for_other_events(event: Event) -> None:
    assert _live().unseen_tool(_params(*event)) is None


def test_cards_show_absolute_paths_and_a_replayed_write_shows_no_false_diff() -> None:
    translator = TurnTranslator(session_id=SESSION, replay=True, cwd="/w")
    [card] = _feed(translator, completed(write(2, "completed", visibleOutput="wrote 4 bytes")))
    assert card["locations"] == [{"path": "/w/a.txt"}]
    assert [block["type"] for block in card["content"]] == ["content"]
    assert _text(card) == (
        "wrote 4 bytes\n\n[muse-acp did not read this file before the change, so no diff is shown.]"
    )


def test_a_live_write_shows_the_text_kept_before_it_ran() -> None:
    translator = TurnTranslator(session_id=SESSION, turn_id=TURN, cwd="/w")
    translator.cards.keep_before("call-w", FileBefore("/w/a.txt", "old\n"))
    opened, done = _feed(
        translator, started(write(1, "inProgress")), completed(write(2, "completed"))
    )
    diff = {"type": "diff", "path": "/w/a.txt", "oldText": "old\n", "newText": "new\n"}
    assert (opened["status"], opened["content"]) == ("in_progress", [diff])
    assert (done["status"], done["content"][0]) == ("completed", diff)


def test_a_tool_card_streams_output_and_ends_with_the_whole_card() -> None:
    translator = _live()
    opened = _feed(translator, started(tool(1, "inProgress")))
    assert opened == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call-1",
            "name": "bash",
            "title": "Build",
            "kind": "execute",
            "status": "in_progress",
            "rawInput": {"command": "make", "description": "Build"},
        }
    ]
    assert _feed(translator, delta("tool-1", "compiling\n", field="output")) == []
    streamed = _feed(translator, delta("tool-1", "." * 1024, field="output"))
    assert streamed == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call-1",
            "name": "bash",
            "status": "in_progress",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "compiling\n" + "." * 1024}}
            ],
        }
    ]
    closed = _feed(translator, completed(tool(2, "completed", visibleOutput="compiled")))
    assert closed == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call-1",
            "name": "bash",
            "title": "Build",
            "kind": "execute",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "compiled"}}],
            "rawInput": {"command": "make", "description": "Build"},
        }
    ]
    assert _feed(translator, delta("tool-1", "late" * 1000, field="output")) == []


def test_a_completion_without_published_output_shows_the_streamed_output() -> None:
    translator = _live()
    _feed(translator, started(tool(1, "inProgress")), delta("tool-1", "ok\n", field="output"))
    closed = _feed(translator, completed(tool(2, "completed")))
    assert _text(closed[0]) == "ok\n"


def test_the_tool_call_id_never_changes_for_an_item() -> None:
    translator = _live()
    first = _feed(
        translator, started(_item("toolCall", "tool-1", 1, "inProgress", tool="bash", args="{}"))
    )
    later = _feed(translator, completed(tool(2, "completed")))
    assert [update["toolCallId"] for update in first + later] == ["tool-1", "tool-1"]


def test_stored_output_references_follow_the_policy() -> None:
    ref = {
        "id": "o-1",
        "uri": "u",
        "kind": "tool_output",
        "byteLen": 9,
        "availability": "available",
    }
    translator = TurnTranslator(
        session_id=SESSION, turn_id=TURN, output=OutputPolicy(references=True)
    )
    card = _feed(translator, completed(tool(2, "completed", visibleOutput="x", outputRef=ref)))[0]
    assert card["_meta"]["muse/output"]["outputRef"] == "o-1"
    baseline = _feed(_live(), completed(tool(2, "completed", visibleOutput="x", outputRef=ref)))[0]
    assert "_meta" not in baseline


def test_progress_updates_stay_few_and_small_for_steady_output() -> None:
    translator = _live()
    _feed(translator, started(tool(1, "inProgress")))
    line = _params(
        "item/delta", {**ENVELOPE, "itemId": "tool-1", "field": "output", "delta": "x" * 99 + "\n"}
    )
    sizes = [
        len(_text(_wire(update)).encode())
        for _ in range(5000)
        for update in translator.on_notification("item/delta", line)
    ]
    assert sizes == sorted(sizes)
    growth = itertools.pairwise(sizes[4:-1])
    assert all(later >= earlier * 1.25 for earlier, later in growth)
    assert CARD_TEXT_LIMIT_BYTES < sizes[-1] <= CARD_TEXT_LIMIT_BYTES + 200
    assert len(sizes) == 16
    assert sum(sizes) < 5 * CARD_TEXT_LIMIT_BYTES + 200


def test_a_hundred_mebibytes_of_output_are_relayed_in_bounded_bytes_and_memory() -> None:
    translator = _live()
    _feed(translator, started(tool(1, "inProgress")))
    chunk = _params(
        "item/delta", {**ENVELOPE, "itemId": "tool-1", "field": "output", "delta": "x" * 65536}
    )
    sent = largest = 0
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for _ in range(1600):
            for update in translator.on_notification("item/delta", chunk):
                size = len(_text(_wire(update)).encode())
                sent, largest = sent + size, max(largest, size)
            buffer = translator.card_output("tool-1")
            assert buffer is not None
            assert buffer.kept_bytes <= CARD_TEXT_LIMIT_BYTES
            assert len(buffer.text().encode()) <= CARD_TEXT_LIMIT_BYTES
        retained, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    for final in _feed(translator, completed(tool(2, "completed"))):
        size = len(_text(final).encode())
        sent, largest = sent + size, max(largest, size)
    buffer = translator.card_output("tool-1")
    assert buffer is not None
    assert buffer.total_bytes == 100 * MIB
    assert sent < MIB
    assert largest <= CARD_TEXT_LIMIT_BYTES + 200
    assert retained - baseline < MIB
    assert peak - baseline < 4 * MIB


def test_late_events_of_another_turn_are_ignored() -> None:
    translator = _live("turn-2")
    other = {"turnId": "turn-1"}
    assert (
        _feed(
            translator,
            started(message("", revision=1, status="inProgress", **other)),
            delta("msg-1", "stale"),
            completed(tool(2, "completed", visibleOutput="stale")),
            delta("tool-1", "stale" * 500, field="output"),
        )
        == []
    )


def test_items_of_the_turn_and_items_outside_turns_pass_the_filter() -> None:
    translator = _live("turn-2")
    shell = {"itemId": "sh-1", "kind": "userShell", "turnId": None, "revision": 1}
    shell |= {"status": "completed", "commandId": "c", "commandText": "pwd", "visibleOutput": "/w"}
    own = message("mine", turnId="turn-2")
    updates = _feed(translator, completed(shell), completed(own))
    assert [update["sessionUpdate"] for update in updates] == ["tool_call", "agent_message_chunk"]


def test_the_turn_filter_applies_from_when_the_turn_becomes_known() -> None:
    translator = _live(None)
    assert _feed(translator, completed(message("early"))) == [said("early")]
    translator.turn_id = "turn-2"
    assert _feed(translator, completed(tool(2, "completed"))) == []


def test_deltas_of_items_never_seen_are_ignored() -> None:
    assert _feed(_live(), delta("nobody", "text"), delta("nobody", "x", field="output")) == []
    assert _feed(_replay(), delta("nobody", "text")) == []


def test_user_messages_are_not_echoed_live() -> None:
    user = _item("userMessage", "u-1", 1, "completed", text="fix it")
    assert _feed(_live(), completed(user)) == []


def test_replay_sends_user_messages_and_full_texts_of_every_turn() -> None:
    history = [
        completed(
            _item("userMessage", "u-1", 1, "completed", text="raw <note>", displayText="fix it")
        ),
        completed(reasoning(["Look first."]) | {"turnId": "old-turn"}),
        completed(message("Fixed.") | {"turnId": "old-turn"}),
        completed(_item("userMessage", "u-2", 2, "completed", text="oops", retracted=True)),
        completed(_item("userMessage", "u-3", 1, "completed", text="thanks")),
    ]
    assert _feed(_replay(), *history) == [
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "text", "text": "fix it"},
            "messageId": "u-1",
        },
        thought("Look first."),
        said("Fixed."),
        {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "text", "text": "thanks"},
            "messageId": "u-3",
        },
    ]


def test_compaction_items_become_compaction_updates_named_by_the_item() -> None:
    item = _item("compaction", "c-1", 1, "inProgress", trigger="auto")
    done = _item("compaction", "c-1", 2, "completed", trigger="auto", tokensBefore=9, tokensAfter=2)
    assert _feed(_live(), started(item), completed(done)) == [
        {"sessionUpdate": "compaction_update", "compactionId": "c-1", "status": "in_progress"},
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "c-1",
            "content": {
                "type": "text",
                "text": "Muse summarised this session's earlier history. "
                "Context went from 9 to 2 tokens.",
            },
        },
        {"sessionUpdate": "compaction_update", "compactionId": "c-1", "status": "completed"},
    ]


def test_the_todo_list_becomes_a_plan() -> None:
    todos = {
        **ENVELOPE,
        "items": [{"text": "a", "status": "inProgress"}, {"text": "b", "status": "done"}],
    }
    assert _feed(_live(), ("session/todoListChanged", todos)) == [
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "a", "priority": "medium", "status": "in_progress"},
                {"content": "[done] b", "priority": "medium", "status": "pending"},
            ],
        }
    ]


def test_context_usage_becomes_a_usage_update_only_with_both_counts() -> None:
    full = {**ENVELOPE, "usedTokens": 10, "windowTokens": 100}
    assert _feed(_live(), ("session/contextUsage", full)) == [
        {"sessionUpdate": "usage_update", "used": 10, "size": 100}
    ]
    assert _feed(_live(), ("session/contextUsage", {**ENVELOPE, "usedTokens": 10})) == []


TOKENS: Final = {"inputTokens": 5, "outputTokens": 7}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("session/tokenUsage", {**ENVELOPE, "turnId": TURN, "usage": TOKENS}),
        ("turn/started", {**ENVELOPE, "turnId": TURN, "commandId": TURN}),
        ("turn/completed", {**ENVELOPE, "turnId": TURN, "terminal": "completed"}),
        ("turn/retracted", {**ENVELOPE, "turnId": TURN, "commandId": TURN}),
        ("session/modelChanged", {**ENVELOPE, "modelId": "m"}),
        ("session/nameChanged", {**ENVELOPE, "name": "  "}),
        ("session/nameChanged", {**ENVELOPE, "name": None}),
        ("view/gap", {"sessionId": "host-sess", "after": "v:1", "next": "v:3"}),
    ],
)
def test_notifications_the_runner_handles_send_nothing(method: str, params: dict[str, Any]) -> None:
    assert _feed(_live(), (method, params)) == []


def test_a_name_muse_gives_the_session_becomes_its_title_on_one_line() -> None:
    [update] = _feed(_live(), ("session/nameChanged", {**ENVELOPE, "name": "parser\ncleanup"}))
    assert update["sessionUpdate"] == "session_info_update"
    assert update["title"] == "parser cleanup"
    assert update["updatedAt"].endswith("Z")


def test_unknown_methods_send_nothing() -> None:
    assert _live().on_notification("session/auraChanged", WireModel()) == []


@settings(deadline=None)
@given(
    text=st.text(min_size=1, max_size=200),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
    streamed=st.integers(min_value=0, max_value=200),
)
def test_deltas_and_snapshot_together_send_the_text_exactly_once(
    text: str, cuts: list[int], streamed: int
) -> None:
    translator = _live()
    sent_part = text[: min(streamed, len(text))]
    bounds = sorted({0, len(sent_part), *(c for c in cuts if c <= len(sent_part))})
    events = [started(message("", revision=1, status="inProgress"))]
    events += [delta("msg-1", sent_part[a:b]) for a, b in itertools.pairwise(bounds)]
    updates = _feed(translator, *events, completed(message(text)))
    assert "".join(update["content"]["text"] for update in updates) == text
    assert all(update["content"]["text"] for update in updates)


def test_text_holding_lone_surrogates_is_relayed_without_errors() -> None:
    translator = _live()
    messages = _feed(
        translator,
        started(message("", revision=1, status="inProgress")),
        delta("msg-1", "a\ud800b"),
        completed(message("a\ud800bc")),
    )
    assert messages == [said("a\ud800b"), said("c")]
    _feed(translator, started(tool(1, "inProgress")))
    streamed = _feed(translator, delta("tool-1", "\udfff" * 2000, field="output"))
    assert _text(streamed[0]) == "\udfff" * 2000


@settings(max_examples=60, deadline=None)
@given(
    pieces=st.lists(st.text(min_size=1, max_size=700), min_size=1, max_size=30),
    extra=st.text(max_size=20),
    flip=st.integers(min_value=0),
)
def test_a_long_streamed_message_is_checked_against_its_snapshot_however_it_was_cut(
    pieces: list[str], extra: str, flip: int
) -> None:
    """The hash of what was sent is kept in batches; a snapshot still matches exactly what was
    sent, and one that differs anywhere in it, even far back, sends nothing more."""
    pieces = ["p" * 4000, *pieces]  # past the batch at a different point each time
    sent = "".join(pieces)
    deltas = [delta("msg-1", piece) for piece in pieces]
    start = started(message("", revision=1, status="inProgress"))

    same = _feed(_live(), start, *deltas, completed(message(sent + extra)))
    assert same == [said(piece) for piece in pieces] + ([said(extra)] if extra else [])

    position = flip % len(sent)
    changed = sent[:position] + ("x" if sent[position] != "x" else "y") + sent[position + 1 :]
    diverged = _feed(_live(), start, *deltas, completed(message(changed + extra)))
    assert diverged == [said(piece) for piece in pieces]
