"""The legacy exec backend's output as ACP: ``muse exec --json`` lines become updates, and how a
run ended becomes the prompt's stop reason or error.

Contract (pure, no I/O): an ``ExecTranslator`` reads one run's lines in order (``on_line``),
each parsed with the generated models of ``spec/exec`` (``muse_acp_wire.exec_jsonl``): text
deltas become message chunks, tool intents and results become cards (exec publishes no
arguments, so no diff or location unless a result names its path), and the terminal record and
approval waits are kept. Anything else is dropped; a line that does not fit its model is counted
in ``unreadable``; an envelope of another ``schema_version`` raises ``ExecFormatError``.
``finish`` fails the cards still open. ``exec_outcome`` maps the exit status to a stop reason or
an error (a refused invocation, a step limit, a refused credential, or -32603 with the host's
reason), every message redacted and bounded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, TypeVar, get_args

from pydantic import ValidationError

from muse_acp.agent.cards.progress import CARD_TEXT_LIMIT_BYTES, cut_note, join_notes, text_content
from muse_acp.agent.cards.tool_cards import TITLE_LIMIT_CHARS
from muse_acp.agent.cards.tool_kinds import kind_for_tool
from muse_acp.agent.errors.failures import Failure
from muse_acp.redact import redact
from muse_acp.rpc import AUTH_REQUIRED, RpcError
from muse_acp.text import clip, cut_utf8, one_line, utf8_size
from muse_acp_wire import acp, exec_jsonl
from muse_acp_wire._base import WireModel

__all__ = [
    "ENVELOPE_VERSION",
    "ExecFormatError",
    "ExecTranslator",
    "approval_unroutable",
    "exec_outcome",
    "protocol_error",
]

ENVELOPE_VERSION: Final = 1
"""The only envelope ``schema_version`` read."""
TOOL_PREFIX: Final = "tool:"
TERMINAL_PREFIX: Final = "run.terminal."
REASON_LIMIT: Final = 500
"""Longest host reason quoted in an error."""
_SUCCESS: Final = frozenset({"success", "succeeded", "ok", "completed"})
_SHELL_TOOLS: Final = frozenset({"bash", "powershell"})
_READ_RESULT: Final = re.compile(r"Read text file `([^`\n]+)`")
_WROTE_RESULT: Final = re.compile(r"wrote \d+ bytes to (\S[^\n]*)")
_STEP_LIMIT: Final = re.compile(r"max[ _-]?(?:model[ _-]?)?steps?|step[ _-]?limit", re.IGNORECASE)
_AUTH: Final = re.compile(
    r"auth|credential|api[ _-]?key|unauthori[sz]ed|log[ _-]?in|\b401\b", re.IGNORECASE
)
_USAGE_EXIT: Final = 2
_SIGNAL_EXITS: Final = (129, 192)
"""Exit statuses a shell reports for a child ended by a signal (128 + its number)."""


def _variants() -> Mapping[str, type[WireModel]]:
    """``payload_type`` -> record model, read off the generated ``ExecRecord`` union."""
    union = exec_jsonl.ExecRecord.model_fields["root"].annotation
    table: dict[str, type[WireModel]] = {}
    for model in get_args(union):
        tag = get_args(model.model_fields["payload_type"].annotation)
        if len(tag) == 1 and isinstance(tag[0], str):
            table[tag[0]] = model
    return MappingProxyType(table)


_VARIANTS: Final = _variants()


class ExecFormatError(Exception):
    """The run's output is in a format this adapter does not read; the message says how."""


def _title(text: str) -> str:
    return clip(one_line(text, TITLE_LIMIT_CHARS * 4), TITLE_LIMIT_CHARS)


_Card = TypeVar("_Card", acp.ToolCallSessionUpdate, acp.ToolCallUpdateSessionUpdate)


def _named(update: _Card, name: str | None) -> _Card:
    """``update`` with the tool's ``name`` when the run named it (never a made-up one)."""
    if name:
        update.name = name  # assigned only when known: an unset member stays out of the dump
    return update


@dataclass(frozen=True, slots=True)
class _Presented:
    """How a tool result shows on its card."""

    text: str
    title: str | None = None
    path: str | None = None
    raw_input: dict[str, str] | None = None


def _present(tool: str, text: str) -> _Presented:
    """The card text, and the title and location the result itself supplies, if any."""
    if tool in _SHELL_TOOLS:
        try:
            parsed: object = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("command"), str):
            command: str = parsed["command"]
            description = parsed.get("description")
            output = parsed.get("output")
            named = description if isinstance(description, str) and description.strip() else None
            return _Presented(
                output if isinstance(output, str) else "",
                title=_title(named or command) if (named or command).strip() else None,
                raw_input={"command": cut_utf8(command, CARD_TEXT_LIMIT_BYTES)[0]},
            )
    found = _READ_RESULT.match(text) or _WROTE_RESULT.fullmatch(text.strip())
    if found is not None:
        path = found.group(1).strip()
        return _Presented(text, title=_title(f"{tool}: {path}"), path=path)
    return _Presented(text)


def _card_text(text: str, failed: bool, outcome: str | None) -> str:
    kept, cut = cut_utf8(text, CARD_TEXT_LIMIT_BYTES)
    notes = [cut_note(utf8_size(text))] if cut else []
    if failed:
        notes.append(f"[Not completed: Muse reported the call as {one_line(outcome or '', 64)}.]")
    return join_notes(kept, notes)


class ExecTranslator:
    """One exec run's output, translated in order (see the module contract)."""

    def __init__(self) -> None:
        self._open: dict[str, str] = {}
        """Cards announced and not yet completed: call id -> tool name."""
        self._seen: set[str] = set()
        self.terminal: str | None = None
        """The outcome word of the run's ``run.terminal.<outcome>`` record, once seen."""
        self.terminal_reason: str | None = None
        self.approval: str | None = None
        """What waits for an approval (a tool name or an operation), once the host asks."""
        self.unreadable = 0

    def on_line(self, line: bytes | str) -> list[acp.SessionUpdate]:
        """The updates for one line of output (none for a blank or unreadable one).

        Raises:
            ExecFormatError: the envelope is of a ``schema_version`` this adapter does not read.
        """
        if not line.strip():
            return []
        try:
            document: object = json.loads(line)
            envelope = exec_jsonl.ExecEnvelope.model_validate(document)
        except (ValueError, RecursionError, ValidationError):
            self.unreadable += 1
            return []
        if envelope.schema_version != ENVELOPE_VERSION:
            raise ExecFormatError(
                f"`muse exec --json` wrote records of envelope version {envelope.schema_version},"
                f" and this muse-acp reads version {ENVELOPE_VERSION} only"
            )
        kind = envelope.payload_type
        if kind.startswith(TERMINAL_PREFIX):
            self._terminal(kind, envelope.payload)
            return []
        model = _VARIANTS.get(kind)
        if model is None:
            return []
        try:
            record = model.model_validate(document)
        except ValidationError:
            self.unreadable += 1
            return []
        return self.on_record(record)

    def on_record(self, record: WireModel) -> list[acp.SessionUpdate]:
        """The updates for one typed record."""
        if isinstance(record, exec_jsonl.OutputDeltaRecord):
            if not record.payload.text:
                return []
            return [
                acp.AgentMessageChunkSessionUpdate(
                    session_update="agent_message_chunk",
                    content=acp.TextContentBlock(type="text", text=record.payload.text),
                )
            ]
        if isinstance(record, exec_jsonl.SideEffectIntentRecord):
            return self._intent(record.payload)
        if isinstance(record, exec_jsonl.ToolResultRecord):
            return [self._result(record.payload)]
        if isinstance(record, exec_jsonl.ApprovalWaitRecord):
            operation = record.payload.operation or ""
            self.approval = operation.removeprefix(TOOL_PREFIX) or "an action"
        return []

    def _terminal(self, kind: str, payload: Mapping[str, object]) -> None:
        try:
            terminal = exec_jsonl.RunTerminalPayload.model_validate(payload)
        except ValidationError:
            self.unreadable += 1
            return
        self.terminal = kind.removeprefix(TERMINAL_PREFIX)
        self.terminal_reason = terminal.reason

    def _intent(self, payload: exec_jsonl.SideEffectIntentPayload) -> list[acp.SessionUpdate]:
        if not payload.operation.startswith(TOOL_PREFIX):
            return []
        named = payload.operation.removeprefix(TOOL_PREFIX)
        tool = named or "tool"
        call_id = payload.idempotency_key.removeprefix(TOOL_PREFIX)
        if not call_id or call_id in self._seen:
            return []
        self._seen.add(call_id)
        self._open[call_id] = named
        return [
            _named(
                acp.ToolCallSessionUpdate(
                    session_update="tool_call",
                    tool_call_id=call_id,
                    title=_title(tool),
                    kind=kind_for_tool(tool),
                    status="pending",
                ),
                named,
            )
        ]

    def _result(self, payload: exec_jsonl.ToolResultPayload) -> acp.SessionUpdate:
        facts = payload.correlation_facts
        call_id = payload.call_id.removeprefix(TOOL_PREFIX) or "tool-result"
        announced = self._open.pop(call_id, None)
        named = (facts.tool_name if facts else None) or announced
        tool = named or "tool"
        outcome = facts.outcome if facts else None
        failed = outcome is not None and outcome.lower() not in _SUCCESS
        shown = _present(tool, payload.text)
        text = _card_text(shown.text, failed, outcome)
        update: acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate
        if announced is None and call_id not in self._seen:
            self._seen.add(call_id)
            update = acp.ToolCallSessionUpdate(
                session_update="tool_call",
                tool_call_id=call_id,
                title=shown.title or _title(tool),
                kind=kind_for_tool(tool),
            )
        else:
            update = acp.ToolCallUpdateSessionUpdate(
                session_update="tool_call_update", tool_call_id=call_id
            )
            if shown.title is not None:
                update.title = shown.title
        if named:
            update.name = named
        # Assigning marks a member as set; members left alone stay out of the dump.
        update.status = "failed" if failed else "completed"
        if text:
            update.content = [text_content(text)]
        if shown.path is not None:
            update.locations = [acp.ToolCallLocation(path=shown.path)]
        if shown.raw_input is not None:
            update.raw_input = dict(shown.raw_input)
        return update

    def finish(self, why: str) -> list[acp.SessionUpdate]:
        """Fail every card still open when the run ended, saying ``why`` it has no result."""
        updates: list[acp.SessionUpdate] = [
            _named(
                acp.ToolCallUpdateSessionUpdate(
                    session_update="tool_call_update",
                    tool_call_id=call_id,
                    status="failed",
                    content=[text_content(f"[Not completed: {why}.]")],
                ),
                named,
            )
            for call_id, named in self._open.items()
        ]
        self._open.clear()
        return updates


# -- how a run ended ----------------------------------------------------------------------


def _sentence(text: str) -> str:
    text = one_line(redact(text), REASON_LIMIT)
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _last_line(stderr_tail: str) -> str | None:
    lines = [line.strip() for line in stderr_tail.splitlines() if line.strip()]
    return lines[-1] if lines else None


def exec_outcome(
    exit_code: int | None, terminal_reason: str | None, stderr_tail: str, flags: Sequence[str]
) -> acp.StopReason | RpcError:
    """The prompt's stop reason, or its error, for a run that ended by itself (not cancelled).

    ``flags`` are the flags the run was given (never its prompt or file paths).
    """
    if exit_code == 0:
        return "end_turn"
    reason = terminal_reason or _last_line(stderr_tail)
    if exit_code == _USAGE_EXIT:
        failure = Failure("invocationRejected", "adapter", retryable=False, phase="starting")
        named = " ".join(flags) or "no flags"
        said = f" It said: {_sentence(reason)}" if reason else ""
        return failure.error(
            f"`muse exec` refused how muse-acp invoked it (exit status 2) with the flags "
            f"{named}, so nothing ran.{said} This Muse release does not accept those flags; "
            "check `muse exec --help`, choose another mode or model, or upgrade Muse Code."
        )
    if exit_code is None or exit_code < 0 or _SIGNAL_EXITS[0] <= exit_code <= _SIGNAL_EXITS[1]:
        failure = Failure("hostExited", "host", retryable=True, phase="running")
        how = (
            "without an exit status"
            if exit_code is None
            else f"by signal {-exit_code if exit_code < 0 else exit_code - 128}"
        )
        return failure.error(
            f"`muse exec` was stopped {how} before the turn finished. Look at the workspace for "
            "what it did, then send the prompt again."
        )
    if reason is not None and _STEP_LIMIT.search(reason):
        return "max_turn_requests"
    if reason is not None and _AUTH.search(reason):
        failure = Failure("authRequired", "provider", retryable=False, phase="running")
        return failure.error(
            f"Muse could not authenticate with its provider: {_sentence(reason)} Sign in with "
            "`muse login` (or `muse-acp login`), or set META_API_KEY in the agent's "
            "environment, then send the prompt again.",
            AUTH_REQUIRED,
        )
    failure = Failure("execFailed", "host", retryable=False, phase="running")
    said = _sentence(reason) if reason else "It gave no reason."
    return failure.error(
        f"`muse exec` failed (exit status {exit_code}): {said} Look at the workspace for what "
        "it did, then send the prompt again."
    )


def approval_unroutable(what: str) -> RpcError:
    """The run waits for an approval that exec cannot hand to the client."""
    failure = Failure("approvalUnroutable", "host", retryable=False, phase="running")
    return failure.error(
        f"Muse asked for approval of {one_line(what, 100)}, but `muse exec` cannot pass "
        "approvals to the client, so the run was stopped. Choose the Auto-approve mode (Muse "
        "then acts without asking) or the Read-only mode (no file writes or shell commands), "
        "then send the prompt again."
    )


def protocol_error(problem: str) -> RpcError:
    """The run's output could not be read (see ``ExecFormatError``)."""
    failure = Failure("hostProtocolError", "host", retryable=False, phase="running")
    return failure.error(f"{problem}, so the run was stopped. Check the Muse Code version.")
