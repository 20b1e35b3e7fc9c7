"""Tool cards built from Muse items: kinds, statuses, titles, inputs, text, diffs, stored output,
locations, and rejected calls."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from muse_acp.agent.cards.file_changes import NOT_READ_NOTE, FileBefore
from muse_acp.agent.cards.output_cards import BASELINE_OUTPUT, OUTPUT_META_KEY, OutputPolicy
from muse_acp.agent.cards.progress import CARD_TEXT_LIMIT_BYTES, OutputBuffer
from muse_acp.agent.cards.tool_cards import (
    ARGS_LIMIT_BYTES,
    CardFacts,
    CardItem,
    output_reference_update,
    tool_call,
    tool_call_update,
)
from muse_acp_wire import acp, msp

SESSION: Final = "sess-1"
ENVELOPE: Final = {"sessionId": "host-sess", "viewCursor": "v:host-sess:7"}
REFERENCES: Final = OutputPolicy(references=True)
AVAILABLE_REF: Final = {
    "id": "out-1",
    "uri": "muse-output://out-1",
    "kind": "tool_output",
    "byteLen": 300000,
    "availability": "available",
    "mediaType": "text/plain",
}
NOT_ENABLED: Final = (
    "[Muse stored the full output (300000 bytes), but the part not shown here cannot be read "
    "back over this connection.]"
)
READABLE: Final = (
    "[The full output (300000 bytes) can be read through this card's muse/output reference.]"
)


def _wire(update: acp.SessionUpdate) -> dict[str, Any]:
    dumped = update.model_dump(mode="json", by_alias=True, exclude_unset=True)
    parsed = acp.SessionNotification.model_validate({"sessionId": SESSION, "update": dumped})
    assert parsed.update.model_dump(mode="json", by_alias=True, exclude_unset=True) == dumped
    return dumped


def _item(wire: dict[str, Any]) -> CardItem:
    base = {"itemId": "item-1", "turnId": "turn-1", "revision": 2, "status": "completed"}
    item = msp.ItemEventParams.model_validate({**ENVELOPE, "item": {**base, **wire}}).item
    assert isinstance(
        item,
        msp.ToolCallItem
        | msp.UserShellItem
        | msp.WorkflowItem
        | msp.SubagentItem
        | msp.UnknownItem,
    )
    return item


def _tool(tool: str, args: Any = None, **members: Any) -> CardItem:
    text = args if isinstance(args, str) else json.dumps(args if args is not None else {})
    return _item({"kind": "toolCall", "tool": tool, "callId": "call-1", "args": text, **members})


def _shell(**members: Any) -> CardItem:
    return _item({"kind": "userShell", "turnId": None, "commandId": "cmd-1", **members})


WORKFLOW: Final = {"kind": "workflow", "workflowRunId": "run-1", "children": []}
SUBAGENT: Final = {
    "kind": "subagent",
    "subagentId": "sub-1",
    "agentPath": "root/scout",
    "depth": 1,
    "objective": "look around",
}


def _text(update: dict[str, Any]) -> str:
    texts = [block["content"]["text"] for block in update["content"] if block["type"] == "content"]
    assert len(texts) == 1
    return str(texts[0])


def test_a_completed_bash_call_becomes_a_full_tool_call() -> None:
    item = _tool(
        "bash",
        {"command": "ls", "description": "List the files"},
        visibleOutput="README.md\nsrc\n",
    )
    assert _wire(tool_call(SESSION, item)) == {
        "sessionUpdate": "tool_call",
        "toolCallId": "call-1",
        "title": "List the files",
        "name": "bash",
        "kind": "execute",
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "README.md\nsrc\n"}}],
        "rawInput": {"command": "ls", "description": "List the files"},
    }


def test_a_later_sighting_repeats_the_whole_card_as_an_update() -> None:
    item = _tool("read_file", {"path": "docs/a.md"}, status="inProgress")
    assert _wire(tool_call_update(SESSION, item)) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call-1",
        "title": "docs/a.md",
        "name": "read_file",
        "kind": "read",
        "status": "in_progress",
        "locations": [{"path": "docs/a.md"}],
        "rawInput": {"path": "docs/a.md"},
    }


def test_the_tool_call_id_falls_back_to_the_item_id_and_can_be_pinned() -> None:
    assert _wire(tool_call(SESSION, _shell(commandText="pwd")))["toolCallId"] == "item-1"
    pinned = tool_call_update(SESSION, _tool("bash"), call_id="first-id")
    assert _wire(pinned)["toolCallId"] == "first-id"


@pytest.mark.parametrize(
    ("tool", "kind"),
    [
        ("bash", "execute"),
        ("powershell", "execute"),
        ("read_file", "read"),
        ("write_file", "edit"),
        ("edit_file", "edit"),
        ("search", "search"),
        ("web_search", "search"),
        ("web_fetch", "fetch"),
        ("read_skill", "other"),
        ("request_user_input", "other"),
        ("mcp__git__status", "other"),
    ],
)
def test_tool_names_map_to_acp_kinds(tool: str, kind: str) -> None:
    assert _wire(tool_call(SESSION, _tool(tool)))["kind"] == kind


@pytest.mark.parametrize(
    ("wire", "name"),
    [
        ({"kind": "toolCall", "tool": "mcp__github__create_issue"}, "mcp__github__create_issue"),
        ({"kind": "toolCall", "tool": "read_skill"}, "read_skill"),
        ({"kind": "userShell", "commandId": "c", "commandText": "make"}, "userShell"),
        (WORKFLOW, "workflow"),
        (SUBAGENT, "subagent"),
        ({"kind": "hookRun", "fallbackText": "hook ran"}, "hookRun"),
    ],
)
def test_every_card_is_named_by_the_muse_tool_or_else_the_item_kind(
    wire: dict[str, Any], name: str
) -> None:
    if wire["kind"] == "toolCall":
        wire = {**wire, "callId": "call-1", "args": "{}"}
    item = _item(wire)
    assert _wire(tool_call(SESSION, item))["name"] == name
    assert _wire(tool_call_update(SESSION, item))["name"] == name


@pytest.mark.parametrize(
    ("wire", "kind"),
    [
        ({"kind": "userShell", "commandId": "c", "commandText": "make"}, "execute"),
        (WORKFLOW, "other"),
        (SUBAGENT, "other"),
        ({"kind": "hookRun", "fallbackText": "hook ran"}, "other"),
    ],
)
def test_items_other_than_tool_calls_map_to_acp_kinds(wire: dict[str, Any], kind: str) -> None:
    assert _wire(tool_call(SESSION, _item(wire)))["kind"] == kind


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("inProgress", "in_progress"),
        ("completed", "completed"),
        ("failed", "failed"),
        ("cancelled", "failed"),
        ("rejected", "failed"),
        ("timedOut", "failed"),
        ("somethingNew", "failed"),
    ],
)
def test_item_statuses_map_to_acp_statuses(status: str, expected: str) -> None:
    assert _wire(tool_call(SESSION, _tool("bash", status=status)))["status"] == expected


@pytest.mark.parametrize(
    ("tool", "args", "title"),
    [
        ("search", {"pattern": "TODO", "paths": [], "description": "d"}, "TODO"),
        ("search", {"paths": ["src"], "glob": ["**/*"]}, "search"),
        ("search", {"pattern": 7, "description": "Find sevens"}, "Find sevens"),
        ("search", {"pattern": "p" * 300}, "p" * 255 + "…"),
        ("web_search", {"query": "acp tool calls"}, "acp tool calls"),
        ("web_search", {"query": ["not", "text"]}, "web_search"),
        ("web_search", {"query": "q" * 300}, "q" * 255 + "…"),
        ("bash", {"command": "ls -la", "description": "List files"}, "List files"),
        ("bash", {"command": "ls -la", "description": "  "}, "ls -la"),
        ("bash", {"command": "c" * 300}, "c" * 255 + "…"),
        ("bash", {"command": "c" * 256}, "c" * 256),
        ("read_file", {"path": "README.md"}, "README.md"),
        ("web_fetch", {"url": "https://example.com/x"}, "https://example.com/x"),
        ("read_skill", {"name": "bundled:plan"}, "read_skill"),
        ("bash", "not json at all", "bash"),
        ("bash", '["ls"]', "bash"),
    ],
)
def test_titles_come_from_public_arguments_and_are_bounded(
    tool: str, args: Any, title: str
) -> None:
    assert _wire(tool_call(SESSION, _tool(tool, args)))["title"] == title


@pytest.mark.parametrize(
    ("wire", "title"),
    [
        ({"kind": "userShell", "commandId": "c", "commandText": "make test"}, "make test"),
        ({"kind": "userShell", "commandId": "c", "commandText": "m" * 300}, "m" * 255 + "…"),
        ({**WORKFLOW, "status": "inProgress"}, "workflow: inProgress"),
        (SUBAGENT, "Subagent: look around"),
        ({**SUBAGENT, "objective": " "}, "Subagent: root/scout"),
        ({**WORKFLOW, "status": "inProgress", "message": "Audit\nthe notes"}, "Workflow: Audit"),
        ({"kind": "hookRun", "status": "failed"}, "hookRun: failed"),
    ],
)
def test_other_items_are_titled_by_command_or_by_kind_and_status(
    wire: dict[str, Any], title: str
) -> None:
    assert _wire(tool_call(SESSION, _item(wire)))["title"] == title


def test_search_without_a_pattern_shows_the_generic_card_and_output_unchanged() -> None:
    item = _tool("search", {"paths": []}, visibleOutput="a.py\nb.py")
    update = _wire(tool_call(SESSION, item))
    assert (update["title"], update["kind"], _text(update)) == ("search", "search", "a.py\nb.py")


@pytest.mark.parametrize(
    ("args", "raw_input"),
    [
        ('{"command": "ls", "n": [1, 2]}', {"command": "ls", "n": [1, 2]}),
        ("[1, 2]", {"arguments": "[1, 2]"}),
        ("42", {"arguments": "42"}),
        ('"text"', {"arguments": '"text"'}),
        ("{not json", {"arguments": "{not json"}),
        ('{"x": NaN}', {"arguments": '{"x": NaN}'}),
        ("[" * 5000, {"arguments": "[" * 5000}),
    ],
)
def test_raw_input_is_the_argument_object_or_the_argument_text(args: str, raw_input: Any) -> None:
    assert _wire(tool_call(SESSION, _tool("bash", args)))["rawInput"] == raw_input


def test_oversized_arguments_are_cut_and_left_unparsed() -> None:
    args = json.dumps({"path": "big.txt", "content": "é" * ARGS_LIMIT_BYTES})
    update = _wire(tool_call(SESSION, _tool("write_file", args)))
    kept = update["rawInput"]["arguments"]
    assert update["rawInput"] == {"arguments": kept, "truncated": True}
    assert args.startswith(kept)
    assert ARGS_LIMIT_BYTES - 2 < len(kept.encode()) <= ARGS_LIMIT_BYTES
    assert (update["title"], "content" in update, "locations" in update) == (
        "write_file",
        False,
        False,
    )


@pytest.mark.parametrize(
    ("wire", "raw_input"),
    [
        ({"kind": "userShell", "commandId": "c", "commandText": "make"}, {"command": "make"}),
        (WORKFLOW, None),
        (SUBAGENT, None),
    ],
)
def test_raw_input_of_other_items_is_the_shell_command_or_absent(
    wire: dict[str, Any], raw_input: Any
) -> None:
    assert _wire(tool_call(SESSION, _item(wire))).get("rawInput") == raw_input


def _buffer(text: str) -> OutputBuffer:
    buffer = OutputBuffer()
    buffer.append(text)
    return buffer


@pytest.mark.parametrize(
    ("members", "output", "text"),
    [
        ({"visibleOutput": "published"}, "streamed", "published"),
        ({"visibleOutput": ""}, "streamed", "streamed"),
        ({}, "streamed", "streamed"),
        ({"status": "failed", "failureReason": "exit 2"}, None, "exit 2"),
        ({"status": "failed", "failureReason": "exit 2"}, "partial", "partial\n\n[Failed: exit 2]"),
        (
            {"status": "failed", "visibleOutput": "boom: exit 2", "failureReason": "exit 2"},
            None,
            "boom: exit 2",
        ),
        ({"status": "cancelled"}, None, "[Not completed: cancelled.]"),
        (
            {"truncated": True, "visibleOutput": "head"},
            None,
            "head\n\n[Muse shortened this output before publishing it; the rest is not shown.]",
        ),
    ],
)
def test_tool_text_prefers_published_then_streamed_output_then_the_failure(
    members: dict[str, Any], output: str | None, text: str
) -> None:
    buffer = None if output is None else _buffer(output)
    assert _text(_wire(tool_call(SESSION, _tool("bash", **members), buffer))) == text


@pytest.mark.parametrize(
    ("wire", "text"),
    [
        ({**SUBAGENT, "result": {"summary": "found it", "text": "long answer"}}, "long answer"),
        ({**SUBAGENT, "result": {"summary": "found it"}, "fallbackText": "fb"}, "found it"),
        ({**SUBAGENT, "fallbackText": "subagent finished"}, "subagent finished"),
        ({**WORKFLOW, "message": "2 of 3 done", "fallbackText": "fb"}, "2 of 3 done"),
        ({"kind": "hookRun", "fallbackText": "hook said hi"}, "hook said hi"),
        ({"kind": "hookRun", "status": "failed"}, "[Not completed: failed.]"),
    ],
)
def test_other_items_show_their_public_result_or_fallback_text(
    wire: dict[str, Any], text: str
) -> None:
    assert _text(_wire(tool_call(SESSION, _item(wire)))) == text


def test_an_item_with_nothing_to_show_has_no_content() -> None:
    assert "content" not in _wire(tool_call(SESSION, _tool("bash", status="inProgress")))


def test_published_output_over_the_card_limit_is_cut_with_a_note() -> None:
    published = "z" * (CARD_TEXT_LIMIT_BYTES + 10)
    text = _text(_wire(tool_call(SESSION, _tool("bash", visibleOutput=published))))
    assert text == "z" * CARD_TEXT_LIMIT_BYTES + (
        f"\n\n[muse-acp shows the first {CARD_TEXT_LIMIT_BYTES} of {CARD_TEXT_LIMIT_BYTES + 10}"
        " bytes of this output; the rest is not on this card.]"
    )


def test_streamed_output_over_the_card_limit_shows_the_kept_prefix_with_a_note() -> None:
    buffer = _buffer("y" * (CARD_TEXT_LIMIT_BYTES + 5))
    text = _text(_wire(tool_call(SESSION, _tool("bash", status="inProgress"), buffer)))
    assert text.startswith("y" * CARD_TEXT_LIMIT_BYTES + "\n\n[muse-acp shows the first")
    assert f"of {CARD_TEXT_LIMIT_BYTES + 5} bytes" in text


WORKSPACE: Final = "/w"
OLD_FILE: Final = "a = 0\nx = 1\nb = 2\n"


def _facts(text: str | None = OLD_FILE, note: str | None = None, **facts: Any) -> CardFacts:
    return CardFacts(cwd=WORKSPACE, before=FileBefore("/w/a.py", text, note), **facts)


def _diff(old: str | None, new: str, path: str = "/w/a.py") -> dict[str, Any]:
    return {"type": "diff", "path": path, "oldText": old, "newText": new}


@pytest.mark.parametrize(
    ("tool", "args", "facts", "diff"),
    [
        pytest.param(
            "write_file",
            {"path": "a.py", "content": "new\n"},
            _facts(),
            _diff(OLD_FILE, "new\n"),
            id="write over an existing file",
        ),
        pytest.param(
            "write_file",
            {"path": "/w/a.py", "content": "new\n"},
            _facts(None),
            _diff(None, "new\n"),
            id="write a new file",
        ),
        pytest.param(
            "edit_file",
            {"path": "a.py", "find": "x = 1", "replace": "x = 2"},
            _facts(),
            _diff(OLD_FILE, "a = 0\nx = 2\nb = 2\n"),
            id="edit: the whole file before and after",
        ),
        pytest.param(
            "edit_file",
            {"path": "./src/../a.py", "find": "b = 2\n", "replace": ""},
            _facts(),
            _diff(OLD_FILE, "a = 0\nx = 1\n"),
            id="edit that removes a line",
        ),
    ],
)
def test_an_editing_tool_shows_the_whole_file_before_and_after(
    tool: str, args: dict[str, Any], facts: CardFacts, diff: dict[str, Any]
) -> None:
    item = _tool(tool, args, status="inProgress")
    update = _wire(tool_call(SESSION, item, facts=facts))
    assert update["content"] == [diff]
    assert update["locations"] == [{"path": "/w/a.py"}]
    assert update["kind"] == "edit"


TWICE: Final = (
    "[The text this edit replaces occurs 2 times in the file; muse-acp cannot tell which one "
    "the tool changes, so no diff is shown.]"
)


@pytest.mark.parametrize(
    ("tool", "args", "facts", "note"),
    [
        pytest.param(
            "write_file",
            {"path": "a.py", "content": "c"},
            CardFacts(cwd="/w"),
            NOT_READ_NOTE,
            id="nothing read before",
        ),
        pytest.param(
            "edit_file",
            {"path": "a.py", "find": "y = 1", "replace": "y = 2"},
            _facts(),
            "[The text this edit replaces was not in the file when muse-acp read it before the "
            "change, so no diff is shown.]",
            id="edit: text not found",
        ),
        pytest.param(
            "edit_file",
            {"path": "a.py", "find": " = ", "replace": "="},
            _facts("a = 1\nb = 2"),
            TWICE,
            id="edit: text found twice",
        ),
        pytest.param(
            "edit_file",
            {"path": "a.py", "find": "x", "replace": "y"},
            _facts(None),
            "[The file did not exist before this edit, so no diff is shown.]",
            id="edit: no such file",
        ),
        pytest.param(
            "write_file",
            {"path": "a.py", "content": "c"},
            _facts(None, "[A note of the reader.]"),
            "[A note of the reader.]",
            id="the reader's note",
        ),
    ],
)
def test_an_editing_tool_without_a_true_diff_says_why(
    tool: str, args: dict[str, Any], facts: CardFacts, note: str
) -> None:
    item = _tool(tool, args, status="inProgress")
    assert _wire(tool_call(SESSION, item, facts=facts))["content"] == [
        {"type": "content", "content": {"type": "text", "text": note}}
    ]


def test_a_completed_write_shows_its_diff_then_its_output() -> None:
    item = _tool(
        "write_file", {"path": "a.py", "content": "hi\n"}, visibleOutput="wrote 3 bytes to a.py"
    )
    update = _wire(tool_call_update(SESSION, item, facts=_facts()))
    assert update["content"] == [
        _diff(OLD_FILE, "hi\n"),
        {"type": "content", "content": {"type": "text", "text": "wrote 3 bytes to a.py"}},
    ]
    assert (update["status"], update["title"]) == ("completed", "a.py")


def test_a_failed_change_shows_no_diff() -> None:
    item = _tool(
        "write_file", {"path": "a.py", "content": "hi\n"}, status="failed", failureReason="denied"
    )
    assert _wire(tool_call_update(SESSION, item, facts=_facts()))["content"] == [
        {"type": "content", "content": {"type": "text", "text": "denied"}}
    ]


REFUSED: Final = "[Rejected: the user did not allow this tool call.]"


@pytest.mark.parametrize("status", ["failed", "rejected", "cancelled"])
def test_a_refused_call_that_did_not_complete_is_titled_and_told_as_rejected(status: str) -> None:
    item = _tool(
        "bash",
        {"command": "rm -rf build"},
        status=status,
        visibleOutput="tool approval cancelled",
    )
    update = _wire(tool_call_update(SESSION, item, facts=CardFacts(refusal=REFUSED)))
    assert (update["title"], update["status"]) == ("Rejected: rm -rf build", "failed")
    assert update["content"] == [{"type": "content", "content": {"type": "text", "text": REFUSED}}]


def test_a_refused_call_that_completed_anyway_shows_what_happened() -> None:
    item = _tool("bash", {"command": "ls"}, visibleOutput="a\n")
    update = _wire(tool_call_update(SESSION, item, facts=CardFacts(refusal=REFUSED)))
    assert (update["title"], update["status"], _text(update)) == ("ls", "completed", "a\n")


@pytest.mark.parametrize(
    ("cwd", "path", "location"),
    [
        ("/w", "docs/a.md", "/w/docs/a.md"),
        ("/w", "/etc/hosts", "/etc/hosts"),
        ("/w/sub", "../a.md", "/w/a.md"),
        (None, "docs/a.md", "docs/a.md"),
    ],
)
def test_locations_are_absolute_against_the_workspace(
    cwd: str | None, path: str, location: str
) -> None:
    item = _tool("read_file", {"path": path}, status="inProgress")
    update = _wire(tool_call(SESSION, item, facts=CardFacts(cwd=cwd)))
    assert update["locations"] == [{"path": location}]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("edit_file", {"path": "/w/a.py", "find": "x"}),
        ("edit_file", {"path": "/w/a.py", "find": 1, "replace": "y"}),
        ("write_file", {"path": "", "content": "c"}),
        ("write_file", {"content": "c"}),
        ("write_file", {"path": "a.py", "content": 3}),
        ("read_file", {"path": "/w/a.py"}),
    ],
)
def test_no_diff_is_shown_without_the_edit_arguments(tool: str, args: dict[str, Any]) -> None:
    item = _tool(tool, args, status="inProgress")
    assert "content" not in _wire(tool_call(SESSION, item, facts=_facts()))


def _stored(**ref: Any) -> CardItem:
    return _tool(
        "bash",
        {"command": "yes | head"},
        visibleOutput="y\ny\n",
        outputRef={**AVAILABLE_REF, **ref},
    )


def test_available_stored_output_is_described_in_meta_with_the_read_method() -> None:
    update = _wire(tool_call(SESSION, _stored(), policy=REFERENCES))
    assert update["_meta"] == {
        OUTPUT_META_KEY: {
            "sessionId": SESSION,
            "itemId": "item-1",
            "outputRef": "out-1",
            "byteLen": 300000,
            "availability": "available",
            "mediaType": "text/plain",
            "method": "_muse/readOutput",
            "maxLengthBytes": 1048576,
        }
    }
    entry = acp.MuseOutputReference.model_validate(update["_meta"][OUTPUT_META_KEY])
    assert (
        entry.model_dump(mode="json", by_alias=True, exclude_unset=True)
        == update["_meta"][OUTPUT_META_KEY]
    )
    assert _text(update) == "y\ny\n\n\n" + READABLE


def test_missing_stored_output_is_described_without_a_read_method() -> None:
    update = _wire(
        tool_call_update(
            SESSION, _stored(availability="missing", mediaType=None), policy=REFERENCES
        )
    )
    assert update["_meta"] == {
        OUTPUT_META_KEY: {
            "sessionId": SESSION,
            "itemId": "item-1",
            "outputRef": "out-1",
            "byteLen": 300000,
            "availability": "missing",
        }
    }
    assert _text(update) == "y\ny\n\n\n[The full output (300000 bytes) is stored but missing.]"


def test_baseline_clients_get_no_reference_but_a_note() -> None:
    update = _wire(tool_call(SESSION, _stored(), policy=BASELINE_OUTPUT))
    assert "_meta" not in update
    assert _text(update) == "y\ny\n\n\n" + NOT_ENABLED


def test_a_card_that_shows_all_the_stored_bytes_claims_nothing_is_missing() -> None:
    update = _wire(tool_call(SESSION, _stored(byteLen=4), policy=BASELINE_OUTPUT))
    assert _text(update) == "y\ny\n"


def test_a_card_whose_publication_muse_shortened_still_says_the_rest_is_unreadable() -> None:
    item = _tool(
        "bash",
        {"command": "yes | head"},
        visibleOutput="y\ny\n",
        truncated=True,
        outputRef={**AVAILABLE_REF, "byteLen": 4},
    )
    assert _text(_wire(tool_call(SESSION, item, policy=BASELINE_OUTPUT))).endswith(
        "cannot be read back over this connection.]"
    )


@pytest.mark.parametrize("policy", [REFERENCES, BASELINE_OUTPUT])
def test_other_meta_on_the_card_is_preserved(policy: OutputPolicy) -> None:
    update = _wire(tool_call(SESSION, _stored(), policy=policy, meta={"vendor/tag": {"n": 1}}))
    assert update["_meta"]["vendor/tag"] == {"n": 1}
    assert (OUTPUT_META_KEY in update["_meta"]) is policy.references


@pytest.mark.parametrize(
    "ref",
    [
        {"id": "r" * 1025},
        {"byteLen": 2**53},
    ],
)
def test_an_invalid_stored_output_reference_is_not_announced(ref: dict[str, Any]) -> None:
    update = _wire(tool_call(SESSION, _stored(**ref), policy=REFERENCES))
    assert "_meta" not in update
    assert _text(update) == "y\ny\n"
    assert output_reference_update(SESSION, _stored(**ref), REFERENCES) is None


def test_a_user_shell_with_stored_output_is_announced_too() -> None:
    item = _shell(commandText="make", outputRef=AVAILABLE_REF)
    assert (
        _wire(tool_call(SESSION, item, policy=REFERENCES))["_meta"][OUTPUT_META_KEY]["itemId"]
        == "item-1"
    )


def test_the_reference_update_carries_only_the_call_id_name_and_reference() -> None:
    update = output_reference_update(SESSION, _stored(mediaType=None), REFERENCES)
    assert update is not None
    assert _wire(update) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call-1",
        "name": "bash",
        "_meta": {
            OUTPUT_META_KEY: {
                "sessionId": SESSION,
                "itemId": "item-1",
                "outputRef": "out-1",
                "byteLen": 300000,
                "availability": "available",
                "method": "_muse/readOutput",
                "maxLengthBytes": 1048576,
            }
        },
    }


def test_no_reference_update_for_baseline_clients_or_items_without_stored_output() -> None:
    assert output_reference_update(SESSION, _stored(), BASELINE_OUTPUT) is None
    assert output_reference_update(SESSION, _tool("bash"), REFERENCES) is None
    assert output_reference_update(SESSION, _item(WORKFLOW), REFERENCES) is None


def test_a_custom_read_limit_is_advertised() -> None:
    policy = OutputPolicy(references=True, max_length_bytes=4096)
    update = _wire(tool_call(SESSION, _stored(), policy=policy))
    assert update["_meta"][OUTPUT_META_KEY]["maxLengthBytes"] == 4096
