"""The exec backend's translation, table by table: ``muse exec --json`` lines to ACP updates,
and how a run ended to a stop reason or an error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from muse_acp.agent.cards.progress import CARD_TEXT_LIMIT_BYTES
from muse_acp.agent.translation.exec_translate import (
    ExecFormatError,
    ExecTranslator,
    approval_unroutable,
    exec_outcome,
    protocol_error,
)
from muse_acp.rpc import AUTH_REQUIRED, INTERNAL_ERROR, RpcError


def line(payload_type: str, payload: dict[str, Any], *, version: int = 1) -> bytes:
    envelope = {
        "schema_version": version,
        "id": "rec-1",
        "stream": {"kind": "session", "id": "s-1"},
        "sequence": 0,
        "recorded_at": "2026-01-01T00:00:00Z",
        "record_type": "event",
        "durability": "durable",
        "causation_id": None,
        "payload_type": payload_type,
        "payload_schema_version": 1,
        "payload": payload,
    }
    return json.dumps(envelope).encode()


def intent(tool: str, call_id: str = "call_1") -> bytes:
    return line(
        "task.lifecycle.side_effect_intent",
        {"operation": f"tool:{tool}", "idempotency_key": f"tool:{call_id}"},
    )


def result(
    text: str, tool: str | None = "bash", outcome: str | None = "success", call_id: str = "call_1"
) -> bytes:
    facts = {k: v for k, v in (("tool_name", tool), ("outcome", outcome)) if v is not None}
    payload: dict[str, Any] = {"call_id": call_id, "text": text}
    if facts:
        payload["correlation_facts"] = facts
    return line("tool.result", payload)


def dumps(translator: ExecTranslator, *lines: bytes) -> list[dict[str, Any]]:
    return [
        update.model_dump(mode="json", by_alias=True, exclude_unset=True)
        for raw in lines
        for update in translator.on_line(raw)
    ]


def bash_text(**members: str) -> str:
    return json.dumps(members)


TEXT_CASES: list[tuple[str, list[bytes], list[dict[str, Any]]]] = [
    (
        "a delta is a message chunk",
        [line("run.output.delta", {"text": "Hello "})],
        [
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Hello "},
            }
        ],
    ),
    ("an empty delta is nothing", [line("run.output.delta", {"text": ""})], []),
    ("the run's start is dropped", [line("run.lifecycle.started", {"prompt": "hi"})], []),
    ("a newer record type is dropped", [line("task.progress", {"percent": 3})], []),
    ("a blank line is nothing", [b"   "], []),
    (
        "an intent opens a generic card",
        [intent("bash")],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_1",
                "name": "bash",
                "title": "bash",
                "kind": "execute",
                "status": "pending",
            }
        ],
    ),
    (
        "a search intent gets no search title",
        [intent("search")],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_1",
                "name": "search",
                "title": "search",
                "kind": "search",
                "status": "pending",
            }
        ],
    ),
    (
        "an effect that is not a tool call has no card",
        [
            line(
                "task.lifecycle.side_effect_intent",
                {"operation": "network:fetch", "idempotency_key": "net:1"},
            )
        ],
        [],
    ),
    (
        "a repeated intent opens no second card",
        [intent("bash"), intent("bash")],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_1",
                "name": "bash",
                "title": "bash",
                "kind": "execute",
                "status": "pending",
            }
        ],
    ),
    (
        "a shell result names its description and shows its output",
        [
            intent("bash"),
            result(bash_text(command="make test", description="Run the tests", output="ok\n")),
        ],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_1",
                "name": "bash",
                "title": "bash",
                "kind": "execute",
                "status": "pending",
            },
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_1",
                "name": "bash",
                "title": "Run the tests",
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "ok\n"}}],
                "rawInput": {"command": "make test"},
            },
        ],
    ),
    (
        "a read result names its path and location",
        [
            intent("read_file"),
            result("Read text file `src/app.py`.\nprint(1)\n", tool="read_file"),
        ],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_1",
                "name": "read_file",
                "title": "read_file",
                "kind": "read",
                "status": "pending",
            },
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_1",
                "name": "read_file",
                "title": "read_file: src/app.py",
                "status": "completed",
                "content": [
                    {
                        "type": "content",
                        "content": {
                            "type": "text",
                            "text": "Read text file `src/app.py`.\nprint(1)\n",
                        },
                    }
                ],
                "locations": [{"path": "src/app.py"}],
            },
        ],
    ),
    (
        "a result without an intent is a card of its own, with no diff",
        [result("wrote 12 bytes to notes.md", tool="write_file", call_id="call_9")],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_9",
                "name": "write_file",
                "title": "write_file: notes.md",
                "kind": "edit",
                "status": "completed",
                "content": [
                    {
                        "type": "content",
                        "content": {"type": "text", "text": "wrote 12 bytes to notes.md"},
                    }
                ],
                "locations": [{"path": "notes.md"}],
            }
        ],
    ),
    (
        "a refused call fails its card and says so",
        [intent("bash"), result("shell tools are disabled", outcome="rejected")],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_1",
                "name": "bash",
                "title": "bash",
                "kind": "execute",
                "status": "pending",
            },
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_1",
                "name": "bash",
                "status": "failed",
                "content": [
                    {
                        "type": "content",
                        "content": {
                            "type": "text",
                            "text": "shell tools are disabled\n\n"
                            "[Not completed: Muse reported the call as rejected.]",
                        },
                    }
                ],
            },
        ],
    ),
    (
        "a result naming nothing is titled generically",
        [result("done", tool=None, outcome=None, call_id="tool:call_5")],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_5",
                "title": "tool",
                "kind": "other",
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": "done"}}],
            }
        ],
    ),
]


@pytest.mark.parametrize(
    ("lines", "expected"), [c[1:] for c in TEXT_CASES], ids=[c[0] for c in TEXT_CASES]
)
def test_lines_become_these_updates(lines: list[bytes], expected: list[dict[str, Any]]) -> None:
    translator = ExecTranslator()
    assert dumps(translator, *lines) == expected
    assert translator.unreadable == 0


def test_a_long_result_is_cut_with_a_note() -> None:
    translator = ExecTranslator()
    [update] = dumps(translator, result("x" * (CARD_TEXT_LIMIT_BYTES + 10), tool="grep"))
    text = update["content"][0]["content"]["text"]
    assert text.startswith("x" * 100)
    assert f"of {CARD_TEXT_LIMIT_BYTES + 10} bytes" in text
    assert len(text.encode()) < CARD_TEXT_LIMIT_BYTES + 200


def test_a_shell_result_that_is_not_json_is_shown_as_text() -> None:
    translator = ExecTranslator()
    [_, update] = dumps(translator, intent("bash"), result("plain output"))
    assert "title" not in update
    assert update["content"][0]["content"]["text"] == "plain output"


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1, 2]",
        b'{"payload_type": "run.output.delta"}',
        line("tool.result", {"text": "no call id"}),
        line("run.output.delta", {"text": 5}),
        line("run.terminal.failed", {"reason": 12}),
    ],
)
def test_unreadable_lines_are_counted_and_skipped(raw: bytes) -> None:
    translator = ExecTranslator()
    assert translator.on_line(raw) == []
    assert translator.unreadable == 1


def test_another_envelope_version_is_refused() -> None:
    with pytest.raises(ExecFormatError, match="envelope version 2"):
        ExecTranslator().on_line(line("run.output.delta", {"text": "x"}, version=2))


def test_terminal_records_and_approval_waits_are_recorded_not_shown() -> None:
    translator = ExecTranslator()
    assert translator.on_line(line("run.terminal.failed", {"reason": "max steps"})) == []
    assert (translator.terminal, translator.terminal_reason) == ("failed", "max steps")
    assert translator.approval is None
    waiting = line("approval_wait.effect.started", {"operation": "tool:bash"})
    assert translator.on_line(waiting) == []
    assert translator.approval == "bash"


def test_finish_fails_the_cards_still_open() -> None:
    translator = ExecTranslator()
    dumps(translator, intent("bash", "a"), intent("search", "b"), result("ok", call_id="a"))
    finished = [
        u.model_dump(mode="json", by_alias=True, exclude_unset=True)
        for u in translator.finish("the turn was cancelled")
    ]
    assert finished == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "b",
            "name": "search",
            "status": "failed",
            "content": [
                {
                    "type": "content",
                    "content": {"type": "text", "text": "[Not completed: the turn was cancelled.]"},
                }
            ],
        }
    ]
    assert translator.finish("again") == []


# -- how a run ended ------------------------------------------------------------------------

FLAGS = ("--json", "--disable-approval")


def failure(outcome: object) -> dict[str, Any]:
    assert isinstance(outcome, RpcError)
    assert isinstance(outcome.data, dict)
    found = outcome.data["failure"]
    assert isinstance(found, dict)
    return found


@pytest.mark.parametrize(
    ("code", "reason", "stderr", "expected"),
    [
        (0, None, "", "end_turn"),
        (0, "max steps reached", "", "end_turn"),
        (1, "the run reached its max model steps (25)", "", "max_turn_requests"),
        (1, None, "warn\nerror: step limit reached\n", "max_turn_requests"),
        (1, "MAX_STEPS exceeded", "", "max_turn_requests"),
    ],
)
def test_exit_statuses_that_are_stop_reasons(
    code: int, reason: str | None, stderr: str, expected: str
) -> None:
    assert exec_outcome(code, reason, stderr, FLAGS) == expected


@pytest.mark.parametrize(
    ("code", "reason", "stderr", "rpc_code", "kind", "words"),
    [
        (
            1,
            "provider authentication failed: 401 Unauthorized",
            "",
            AUTH_REQUIRED,
            "authRequired",
            ["401 Unauthorized", "muse login", "META_API_KEY"],
        ),
        (1, None, "muse: error: invalid API key", AUTH_REQUIRED, "authRequired", ["API key"]),
        (1, "the model failed (boom)", "", INTERNAL_ERROR, "execFailed", ["exit status 1", "boom"]),
        (3, None, "", INTERNAL_ERROR, "execFailed", ["It gave no reason."]),
        (
            2,
            None,
            "error: unexpected argument '--disable-approval'\n",
            INTERNAL_ERROR,
            "invocationRejected",
            ["exit status 2", "--json --disable-approval", "unexpected argument"],
        ),
        (None, None, "", INTERNAL_ERROR, "hostExited", ["without an exit status"]),
        (-9, None, "", INTERNAL_ERROR, "hostExited", ["by signal 9"]),
        (137, None, "", INTERNAL_ERROR, "hostExited", ["by signal 9"]),
    ],
)
def test_exit_statuses_that_are_errors(
    code: int | None,
    reason: str | None,
    stderr: str,
    rpc_code: int,
    kind: str,
    words: list[str],
) -> None:
    outcome = exec_outcome(code, reason, stderr, FLAGS)
    assert isinstance(outcome, RpcError)
    assert outcome.code == rpc_code
    assert failure(outcome)["kind"] == kind
    for word in words:
        assert word in outcome.message


def test_a_refused_invocation_ran_nothing() -> None:
    assert failure(exec_outcome(2, None, "", FLAGS))["execution"] == "notSubmitted"
    assert failure(exec_outcome(1, "x", "", FLAGS))["execution"] == "possiblySubmitted"


def test_host_reasons_are_redacted_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("META_API_KEY", "sk-very-secret-key")
    outcome = exec_outcome(1, "crashed with sk-very-secret-key " + "y" * 2000, "", FLAGS)
    assert isinstance(outcome, RpcError)
    assert "sk-very-secret-key" not in outcome.message
    assert "[redacted]" in outcome.message
    assert len(outcome.message) < 1000


def test_the_approval_and_protocol_failures_say_what_to_do() -> None:
    approval = approval_unroutable("bash")
    assert approval.code == INTERNAL_ERROR
    assert "approval of bash" in approval.message
    assert "Auto-approve" in approval.message
    assert "Read-only" in approval.message
    assert failure(approval)["kind"] == "approvalUnroutable"
    broken = protocol_error("`muse exec --json` wrote records of envelope version 2")
    assert failure(broken)["kind"] == "hostProtocolError"
    assert "Muse Code version" in broken.message
