"""The tool cards of one turn: status only forward, one file read per card, rejected calls."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from muse_acp.agent.asks.permissions import PermissionCard
from muse_acp.agent.cards.card_states import TURN_FILE_TEXT_LIMIT_BYTES, TurnCards
from muse_acp.agent.cards.file_changes import FileBefore
from muse_acp.agent.cards.output_cards import OutputPolicy
from muse_acp.agent.cards.progress import CARD_TEXT_LIMIT_BYTES
from muse_acp.agent.cards.tool_cards import CardItem
from muse_acp_wire import acp, msp

SESSION: Final = "sess-1"
CALL: Final = "call-1"
WRITE_ARGS: Final = json.dumps({"path": "a.txt", "content": "new\n"})
REJECTED_BY_USER: Final = "[Rejected: the user did not allow this tool call.]"


def _item(
    status: str, revision: int, tool: str = "bash", args: str = "{}", **members: Any
) -> CardItem:
    wire = {
        "itemId": "item-1",
        "kind": "toolCall",
        "turnId": "turn-1",
        "revision": revision,
        "status": status,
        "tool": tool,
        "callId": CALL,
        "args": args,
        **members,
    }
    item = msp.ItemEventParams.model_validate(
        {"sessionId": "s", "viewCursor": "v:s:1", "item": wire}
    ).item
    assert isinstance(item, msp.ToolCallItem)
    return item


def _wire(update: acp.SessionUpdate | list[acp.SessionUpdate]) -> dict[str, Any]:
    if isinstance(update, list):  # a sighting: one update unless the card is a terminal
        (update,) = update
    dumped: dict[str, Any] = update.model_dump(mode="json", by_alias=True, exclude_unset=True)
    acp.SessionNotification.model_validate({"sessionId": SESSION, "update": dumped})
    return dumped


def _statuses(cards: TurnCards, *items: CardItem) -> list[tuple[str, str]]:
    return [
        (u["sessionUpdate"], u["status"])
        for u in (_wire(cards.sighting(CALL, item)) for item in items)
    ]


def test_a_card_is_announced_once_then_updated_with_its_status() -> None:
    cards = TurnCards(SESSION)
    assert _statuses(cards, _item("inProgress", 1), _item("completed", 2)) == [
        ("tool_call", "in_progress"),
        ("tool_call_update", "completed"),
    ]


def test_a_permission_for_a_running_card_leaves_its_status_alone() -> None:
    cards = TurnCards(SESSION)
    cards.sighting(CALL, _item("inProgress", 1))
    assert cards.permission(CALL, "bash", "{}") == PermissionCard(status=None)
    assert _statuses(cards, _item("inProgress", 2), _item("completed", 3)) == [
        ("tool_call_update", "in_progress"),
        ("tool_call_update", "completed"),
    ]


def test_a_permission_before_the_card_is_pending_and_the_card_moves_on_from_there() -> None:
    cards = TurnCards(SESSION)
    assert cards.permission(CALL, "bash", "{}").status == "pending"
    assert cards.permission(CALL, "bash", "{}").status is None  # a later stage
    assert _statuses(cards, _item("inProgress", 1)) == [("tool_call", "in_progress")]


def test_a_status_that_would_go_back_keeps_the_one_shown() -> None:
    cards = TurnCards(SESSION)
    assert _statuses(cards, _item("completed", 2), _item("inProgress", 3)) == [
        ("tool_call", "completed"),
        ("tool_call_update", "completed"),
    ]


def test_output_after_the_end_is_not_shown_as_running() -> None:
    cards = TurnCards(SESSION)
    cards.sighting(CALL, _item("inProgress", 1))
    [running] = cards.streamed(CALL, "x" * CARD_TEXT_LIMIT_BYTES)
    assert (_wire(running)["status"], _wire(running)["name"]) == ("in_progress", "bash")
    cards.sighting(CALL, _item("failed", 2))
    assert cards.streamed(CALL, "y" * CARD_TEXT_LIMIT_BYTES) == []
    assert cards.streamed("unknown", "z" * CARD_TEXT_LIMIT_BYTES) == []


def test_an_editing_tools_file_is_wanted_once_and_only_before_it_runs() -> None:
    cards = TurnCards(SESSION, cwd="/w")
    assert cards.wants_before(CALL, "bash", '{"path": "a.txt"}') is None
    assert cards.wants_before(CALL, "write_file", WRITE_ARGS) == "a.txt"
    assert cards.wants_before(CALL, "write_file", WRITE_ARGS) is None
    seen = TurnCards(SESSION, cwd="/w")
    seen.sighting(CALL, _item("inProgress", 1, "write_file", WRITE_ARGS))
    assert seen.wants_before(CALL, "write_file", WRITE_ARGS) is None
    for idle in (TurnCards(SESSION, cwd="/w", replay=True), TurnCards(SESSION)):
        assert idle.wants_before(CALL, "write_file", WRITE_ARGS) is None


def test_the_text_read_before_becomes_the_cards_diff_and_the_permissions() -> None:
    cards = TurnCards(SESSION, cwd="/w")
    cards.keep_before(CALL, FileBefore("/w/a.txt", "old\n"))
    cards.keep_before(CALL, FileBefore("/w/a.txt", "read later\n"))  # the first read wins
    diff = acp.DiffToolCallContent(type="diff", path="/w/a.txt", old_text="old\n", new_text="new\n")
    location = acp.ToolCallLocation(path="/w/a.txt")
    assert cards.permission(CALL, "write_file", WRITE_ARGS) == PermissionCard(
        "pending", (diff,), (location,)
    )
    card = _wire(cards.sighting(CALL, _item("inProgress", 1, "write_file", WRITE_ARGS)))
    assert card["content"] == [diff.model_dump(mode="json", by_alias=True, exclude_unset=True)]
    assert card["locations"] == [{"path": "/w/a.txt"}]


def test_file_text_kept_for_a_turn_is_bounded() -> None:
    cards = TurnCards(SESSION, cwd="/w")
    cards.keep_before("first", FileBefore("/w/a.txt", "a" * TURN_FILE_TEXT_LIMIT_BYTES))
    assert cards.wants_before(CALL, "write_file", WRITE_ARGS) is None
    [note] = cards.permission(CALL, "write_file", WRITE_ARGS).content
    assert isinstance(note, acp.ContentToolCallContent)
    assert isinstance(note.content, acp.TextContentBlock)
    assert "did not read this file" in note.content.text


def test_a_refusal_before_the_end_makes_the_failed_card_say_rejected() -> None:
    cards = TurnCards(SESSION)
    cards.sighting(CALL, _item("inProgress", 1))
    assert cards.refused(CALL, "user") == []
    end = _wire(cards.sighting(CALL, _item("failed", 2, visibleOutput="tool approval cancelled")))
    assert (end["status"], end["title"]) == ("failed", "Rejected: bash")
    assert end["content"] == [
        {"type": "content", "content": {"type": "text", "text": REJECTED_BY_USER}}
    ]


@pytest.mark.parametrize(
    ("refusal", "text"),
    [
        ("user", REJECTED_BY_USER),
        (
            "client",
            "[Rejected: the client cancelled the permission request, so muse-acp declined this "
            "tool call.]",
        ),
        ("mode", "[Rejected: the session's Auto-reject mode declined this tool call.]"),
    ],
)
def test_a_refusal_after_the_end_sends_the_failed_card_again_once(refusal: Any, text: str) -> None:
    cards = TurnCards(SESSION)
    cards.sighting(CALL, _item("failed", 1, visibleOutput="tool approval cancelled"))
    [update] = cards.refused(CALL, refusal)
    assert _wire(update) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": CALL,
        "title": "Rejected: bash",
        "name": "bash",
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
    }
    assert cards.refused(CALL, "user") == []


def test_a_refused_call_that_completed_stays_completed() -> None:
    cards = TurnCards(SESSION)
    cards.sighting(CALL, _item("completed", 1))
    assert cards.refused(CALL, "user") == []
    assert _statuses(cards, _item("completed", 2)) == [("tool_call_update", "completed")]


def _shell(status: str, revision: int, **members: Any) -> CardItem:
    wire = {
        "itemId": "shell-1",
        "kind": "userShell",
        "turnId": None,
        "revision": revision,
        "status": status,
        "commandId": "cmd-1",
        "commandText": "make test",
        **members,
    }
    item = msp.ItemEventParams.model_validate(
        {"sessionId": "s", "viewCursor": "v:s:1", "item": wire}
    ).item
    assert isinstance(item, msp.UserShellItem)
    return item


def test_a_user_shell_card_shown_as_a_terminal_ends_with_the_exit_muse_reported() -> None:
    cards = TurnCards(SESSION, cwd="/work", output=OutputPolicy(references=False, terminal=True))
    (opened,) = [_wire(u) for u in cards.sighting("shell-1", _shell("inProgress", 1))]
    assert opened["_meta"] == {"terminal_info": {"terminal_id": "shell-1", "cwd": "/work"}}
    assert opened["content"] == [{"type": "terminal", "terminalId": "shell-1"}]
    (chunk,) = [_wire(u) for u in cards.streamed("shell-1", "ok\n")]
    assert chunk["_meta"] == {"terminal_output": {"terminal_id": "shell-1", "data": "ok\n"}}
    ended = _shell("failed", 2, visibleOutput="ok\n", exitCode=2, exitSignal=9)
    (closed,) = [_wire(u) for u in cards.sighting("shell-1", ended)]
    assert closed["_meta"] == {
        "terminal_exit": {"terminal_id": "shell-1", "exit_code": 2, "signal": "9"}
    }
    # Seen only once it ended (history), the card opens its terminal, then fills and closes it.
    replayed = TurnCards(SESSION, output=OutputPolicy(references=False, terminal=True), replay=True)
    first, second = [_wire(u) for u in replayed.sighting("shell-1", ended)]
    assert (first["sessionUpdate"], second["sessionUpdate"]) == ("tool_call", "tool_call_update")
    assert "terminal_info" in first["_meta"]
    assert second["_meta"] == {
        "terminal_output": {"terminal_id": "shell-1", "data": "ok\n"},
        "terminal_exit": {"terminal_id": "shell-1", "exit_code": 2, "signal": "9"},
    }
