"""Plan updates, and the bounded output buffer of tool cards."""

from __future__ import annotations

from typing import Any, Final

import pytest

from muse_acp.agent.cards.progress import (
    CARD_TEXT_LIMIT_BYTES,
    PLAN_ENTRY_LIMIT,
    PLAN_TEXT_LIMIT_BYTES,
    PROGRESS_MIN_BYTES,
    OutputBuffer,
    output_progress_update,
    plan_update,
)
from muse_acp.text import cut_utf8
from muse_acp_wire import acp, msp

SESSION: Final = "sess-1"
ENVELOPE: Final = {"sessionId": "host-sess", "viewCursor": "v:host-sess:3"}


def _wire(update: acp.SessionUpdate) -> dict[str, Any]:
    dumped = update.model_dump(mode="json", by_alias=True, exclude_unset=True)
    parsed = acp.SessionNotification.model_validate({"sessionId": SESSION, "update": dumped})
    assert parsed.update.model_dump(mode="json", by_alias=True, exclude_unset=True) == dumped
    return dumped


def _todos(*items: tuple[str, str]) -> list[msp.TodoItem]:
    params = msp.SessionTodoListChangedParams.model_validate(
        {**ENVELOPE, "items": [{"text": text, "status": status} for text, status in items]}
    )
    return params.items


@pytest.mark.parametrize(
    ("status", "entry"),
    [
        ("pending", {"content": "write tests", "priority": "medium", "status": "pending"}),
        ("inProgress", {"content": "write tests", "priority": "medium", "status": "in_progress"}),
        ("completed", {"content": "write tests", "priority": "medium", "status": "completed"}),
        (
            "cancelled",
            {"content": "[cancelled] write tests", "priority": "medium", "status": "pending"},
        ),
        (
            "blocked",
            {"content": "[blocked] write tests", "priority": "medium", "status": "pending"},
        ),
    ],
)
def test_todo_status_maps_to_plan_status_and_unknown_statuses_are_labelled_pending(
    status: str, entry: dict[str, str]
) -> None:
    assert _wire(plan_update(_todos(("write tests", status)))) == {
        "sessionUpdate": "plan",
        "entries": [entry],
    }


def test_plan_keeps_the_todo_order_and_replaces_with_an_empty_list() -> None:
    update = _wire(plan_update(_todos(("one", "completed"), ("two", "pending"))))
    assert [entry["content"] for entry in update["entries"]] == ["one", "two"]
    assert _wire(plan_update([])) == {"sessionUpdate": "plan", "entries": []}


def test_plan_keeps_at_most_the_entry_limit() -> None:
    todos = _todos(*((f"task {n}", "pending") for n in range(PLAN_ENTRY_LIMIT + 20)))
    entries = _wire(plan_update(todos))["entries"]
    assert len(entries) == PLAN_ENTRY_LIMIT
    assert entries[-1]["content"] == f"task {PLAN_ENTRY_LIMIT - 1}"


@pytest.mark.parametrize("unit", ["a", "é", "漢", "🙂"])
def test_plan_entry_text_is_cut_to_its_byte_limit_with_an_ellipsis(unit: str) -> None:
    text = unit * (PLAN_TEXT_LIMIT_BYTES + 1)
    content = _wire(plan_update(_todos((text, "pending"))))["entries"][0]["content"]
    assert content.endswith("…")
    assert len(content.encode()) <= PLAN_TEXT_LIMIT_BYTES
    assert text.startswith(content[:-1])
    assert len(content.encode()) > PLAN_TEXT_LIMIT_BYTES - 8


def test_plan_entry_text_at_the_limit_is_kept_whole() -> None:
    text = "a" * PLAN_TEXT_LIMIT_BYTES
    assert _wire(plan_update(_todos((text, "pending"))))["entries"][0]["content"] == text


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("hello", 5, ("hello", False)),
        ("hello", 4, ("hell", True)),
        ("héllo", 2, ("h", True)),
        ("héllo", 3, ("hé", True)),
        ("🙂🙂", 7, ("🙂", True)),
        ("", 0, ("", False)),
        ("x", 0, ("", True)),
    ],
)
def test_cut_utf8_keeps_the_longest_whole_character_prefix(
    text: str, limit: int, expected: tuple[str, bool]
) -> None:
    assert cut_utf8(text, limit) == expected


def test_output_buffer_shows_after_enough_growth_only() -> None:
    buffer = OutputBuffer()
    assert buffer.append("x" * (PROGRESS_MIN_BYTES - 1)) is False
    assert buffer.append("x") is True
    assert buffer.append("x" * (PROGRESS_MIN_BYTES - 1)) is False
    assert buffer.append("x") is True
    assert buffer.text() == "x" * 2 * PROGRESS_MIN_BYTES


def test_output_buffer_asks_for_a_quarter_more_than_last_shown_once_that_exceeds_the_minimum() -> (
    None
):
    buffer = OutputBuffer()
    assert buffer.append("x" * 8000) is True
    assert buffer.append("x" * 1999) is False
    assert buffer.append("x") is True
    assert buffer.kept_bytes == 10000


def test_output_buffer_marked_shown_counts_growth_from_then() -> None:
    buffer = OutputBuffer()
    buffer.append("x" * 900)
    buffer.mark_shown()
    assert buffer.append("x" * 900) is False
    assert buffer.append("x" * 124) is True


def test_output_buffer_keeps_a_prefix_up_to_the_cap_and_then_only_counts() -> None:
    buffer = OutputBuffer()
    assert buffer.append("a" * (CARD_TEXT_LIMIT_BYTES - 1)) is True
    assert buffer.append("é") is True
    assert buffer.capped
    assert buffer.kept_bytes == CARD_TEXT_LIMIT_BYTES - 1
    assert buffer.append("b") is False
    assert buffer.text() == "a" * (CARD_TEXT_LIMIT_BYTES - 1)
    assert buffer.total_bytes == CARD_TEXT_LIMIT_BYTES + 2


def test_output_buffer_exactly_full_is_not_capped_until_more_arrives() -> None:
    buffer = OutputBuffer()
    buffer.append("a" * CARD_TEXT_LIMIT_BYTES)
    assert not buffer.capped
    assert buffer.append("b") is True
    assert buffer.capped
    assert buffer.text() == "a" * CARD_TEXT_LIMIT_BYTES


def test_progress_updates_carry_only_the_streamed_text() -> None:
    assert _wire(output_progress_update("call-1", _buffer("line 1\n"))) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call-1",
        "status": "in_progress",
        "content": [{"type": "content", "content": {"type": "text", "text": "line 1\n"}}],
    }


def test_a_cut_progress_update_says_how_much_output_arrived() -> None:
    update = _wire(output_progress_update("call-1", _buffer("y" * (CARD_TEXT_LIMIT_BYTES + 5))))
    assert update["content"][0]["content"]["text"] == "y" * CARD_TEXT_LIMIT_BYTES + (
        f"\n\n[muse-acp shows the first {CARD_TEXT_LIMIT_BYTES} of {CARD_TEXT_LIMIT_BYTES + 5}"
        " bytes of this output; the rest is not on this card.]"
    )


def _buffer(text: str) -> OutputBuffer:
    buffer = OutputBuffer()
    buffer.append(text)
    return buffer
