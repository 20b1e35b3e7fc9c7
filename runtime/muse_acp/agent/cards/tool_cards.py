"""Tool cards: pure functions from a Muse item that does work to an ACP tool call.

Contract: every ``toolCall``, ``userShell``, ``workflow`` and ``subagent`` item, and every item
kind this adapter does not know, is shown as one ACP tool call, rebuilt in full from the item's
latest revision and its ``OutputBuffer``; nothing here keeps state. ``tool_call`` builds the first
sighting and ``tool_call_update`` any later one, both with the whole card; the ``toolCallId``
never changes, and ``name`` is Muse's own tool name (``tool_name``: MCP tools as Muse names them,
the item kind for work that is no tool call). Editing tools show a diff (``file_changes``), a
refused approval shows only why, and ``_meta["muse/output"]`` describes stored output under
``OutputPolicy.references``; a card shown as a terminal (``CardFacts.terminal``,
``terminal_cards``) holds the terminal and its notes instead of its output text.
Titles and text come from public item members only, never made up, and are bounded by
``TITLE_LIMIT_CHARS``, ``CARD_TEXT_LIMIT_BYTES`` and ``ARGS_LIMIT_BYTES``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, NoReturn, TypeAlias, TypeVar

from muse_acp.agent.cards.child_sessions import workflow_text
from muse_acp.agent.cards.delegated_titles import delegated_title
from muse_acp.agent.cards.file_changes import FileBefore, absolute_path, change_content
from muse_acp.agent.cards.output_cards import (
    BASELINE_OUTPUT,
    STATUS_LIMIT_CHARS,
    OutputPolicy,
    card_meta,
    output_reference,
    stored_output,
    stored_output_notes,
)
from muse_acp.agent.cards.progress import (
    CARD_TEXT_LIMIT_BYTES,
    OutputBuffer,
    cut_note,
    join_notes,
    text_content,
)
from muse_acp.agent.cards.terminal_cards import terminal_content
from muse_acp.agent.cards.tool_kinds import kind_for_tool
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp.text import clip, cut_utf8, utf8_size
from muse_acp_wire import acp, msp

__all__ = [
    "ARGS_LIMIT_BYTES",
    "NO_FACTS",
    "TITLE_LIMIT_CHARS",
    "CardFacts",
    "CardItem",
    "card_title",
    "output_reference_update",
    "refused_title",
    "tool_arguments",
    "tool_call",
    "tool_call_id",
    "tool_call_update",
    "tool_kind",
    "tool_locations",
    "tool_name",
    "tool_status",
]

CardItem: TypeAlias = (
    msp.ToolCallItem | msp.UserShellItem | msp.WorkflowItem | msp.SubagentItem | msp.UnknownItem
)
"""The items shown as tool cards."""

ARGS_LIMIT_BYTES: Final = 64 * 1024
"""Largest argument text that is parsed; longer arguments are shown cut and unparsed."""
TITLE_LIMIT_CHARS: Final = 256

_FAILURE_LIMIT_BYTES: Final = 4096


_STATUSES: Final[Mapping[str, acp.ToolCallStatus]] = MappingProxyType(
    {"inProgress": "in_progress", "completed": "completed"}
)
"""ACP status per item status; every other status ends the card as ``failed``."""

_QUERY_ARGUMENTS: Final[Mapping[str, str]] = MappingProxyType(
    {"search": "pattern", "web_search": "query"}
)
"""Tools titled by what they look for, and the argument that holds it."""

_TITLE_ARGUMENTS: Final = ("description", "command", "path", "url")
"""Arguments that make a readable title, in order of preference."""


_REJECTED: Final = "Rejected: "


@dataclass(frozen=True, slots=True)
class CardFacts:
    """What muse-acp knows of a card beyond its item."""

    cwd: str | None = None
    """The session's workspace, against which relative paths are shown absolute."""
    before: FileBefore | None = None
    """What an editing tool's file held before the tool ran (None: not read)."""
    refusal: str | None = None
    """Why the tool call was declined (a note of our own), when muse-acp denied its approval:
    a failed card then shows only this, titled as rejected."""
    terminal: bool = False
    """The card shows its output in a terminal (``terminal_cards``): only its notes are text."""


NO_FACTS: Final = CardFacts()


def tool_call_id(item: CardItem) -> str:
    """The ACP ``toolCallId`` of ``item``: its ``callId``, or else its ``itemId``."""
    if isinstance(item, msp.ToolCallItem) and item.call_id:
        return item.call_id
    return item.item_id


def tool_name(item: CardItem) -> str:
    """The card's ``name``: the tool Muse called, verbatim, or else the item's kind
    (``userShell``, ``subagent``, ``workflow``, an unknown kind)."""
    if isinstance(item, msp.ToolCallItem) and item.tool:
        return item.tool
    return item.kind


def tool_kind(item: CardItem) -> acp.ToolKind:
    if isinstance(item, msp.ToolCallItem):
        return kind_for_tool(item.tool)
    if isinstance(item, msp.UserShellItem):
        return "execute"
    return "other"


def tool_status(status: str) -> acp.ToolCallStatus:
    return _STATUSES.get(status, "failed")


def tool_call(
    session_id: str,
    item: CardItem,
    output: OutputBuffer | None = None,
    policy: OutputPolicy = BASELINE_OUTPUT,
    *,
    call_id: str | None = None,
    meta: Mapping[str, JsonValue] | None = None,
    facts: CardFacts = NO_FACTS,
) -> acp.ToolCallSessionUpdate:
    """The first sighting of ``item``'s card; ``meta`` is merged into the card's ``_meta``."""
    args = _Arguments.of(item)
    update = acp.ToolCallSessionUpdate(
        session_update="tool_call",
        tool_call_id=call_id or tool_call_id(item),
        title=_title(item, args),
        name=tool_name(item),
    )
    return _fill(update, session_id, item, args, output, policy, meta, facts)


def tool_call_update(
    session_id: str,
    item: CardItem,
    output: OutputBuffer | None = None,
    policy: OutputPolicy = BASELINE_OUTPUT,
    *,
    call_id: str | None = None,
    meta: Mapping[str, JsonValue] | None = None,
    facts: CardFacts = NO_FACTS,
) -> acp.ToolCallUpdateSessionUpdate:
    """A later sighting of ``item``'s card, repeating the whole card."""
    args = _Arguments.of(item)
    update = acp.ToolCallUpdateSessionUpdate(
        session_update="tool_call_update",
        tool_call_id=call_id or tool_call_id(item),
        title=_title(item, args),
        name=tool_name(item),
    )
    return _fill(update, session_id, item, args, output, policy, meta, facts)


def card_title(item: CardItem) -> str:
    """The title ``item``'s card shows."""
    return _title(item, _Arguments.of(item))


def tool_arguments(args: str) -> Mapping[str, JsonValue]:
    """A tool call's arguments as an object (empty when they are not one, or too long)."""
    return _Arguments.parse(args).fields


def output_reference_update(
    session_id: str, item: CardItem, policy: OutputPolicy
) -> acp.ToolCallUpdateSessionUpdate | None:
    """A ``tool_call_update`` carrying only ``item``'s stored output reference, or None."""
    reference = output_reference(session_id, item, policy)
    if reference is None:
        return None
    return acp.ToolCallUpdateSessionUpdate(
        session_update="tool_call_update",
        tool_call_id=tool_call_id(item),
        name=tool_name(item),
        field_meta=card_meta(None, reference),
    )


_Update = TypeVar("_Update", acp.ToolCallSessionUpdate, acp.ToolCallUpdateSessionUpdate)


def _fill(
    update: _Update,
    session_id: str,
    item: CardItem,
    args: _Arguments,
    output: OutputBuffer | None,
    policy: OutputPolicy,
    meta: Mapping[str, JsonValue] | None,
    facts: CardFacts,
) -> _Update:
    # Assigning marks a member as set; members left alone stay out of the dump.
    update.kind = tool_kind(item)
    update.status = status = tool_status(item.status)
    reference = output_reference(session_id, item, policy)
    content: list[acp.ToolCallContent] = []
    if facts.refusal is not None and status == "failed":
        update.title = refused_title(update.title or "")
        content.append(text_content(facts.refusal))
    else:
        # A failed change did not happen as planned: only other cards show it.
        diff, note = (None, None) if status == "failed" else _change(item, args, facts)
        if diff is not None:
            content.append(diff)
        text, notes = _card_text(item, output, reference, policy, note, facts.terminal, status)
        if facts.terminal:
            content.append(terminal_content(update.tool_call_id))
            text = ""
        if text or notes:
            content.append(text_content(join_notes(text, notes)))
    if content:
        update.content = content
    locations = tool_locations(args.fields, facts.cwd)
    if locations:
        update.locations = locations
    raw_input = _raw_input(item, args)
    if raw_input is not None:
        update.raw_input = raw_input
    merged = card_meta(meta, reference)
    if merged:
        update.field_meta = merged
    return update


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


_ARGS_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)
"""Reads a call's arguments: ``json.loads`` with an option builds a decoder per call, about
half of reading a typical call's arguments, and every sighting of a card reads them."""


@dataclass(frozen=True, slots=True)
class _Arguments:
    """A tool call's arguments: the members when they form a JSON object, and the rawInput."""

    fields: Mapping[str, JsonValue]
    raw_input: JsonValue

    @classmethod
    def of(cls, item: CardItem) -> _Arguments:
        return cls.parse(item.args) if isinstance(item, msp.ToolCallItem) else cls({}, None)

    @classmethod
    def parse(cls, args: str) -> _Arguments:
        kept, cut = cut_utf8(args, ARGS_LIMIT_BYTES)
        if cut:
            return cls({}, {"arguments": kept, "truncated": True})
        try:
            parsed: object = _ARGS_DECODER.decode(args)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            return cls(parsed, parsed)
        return cls({}, {"arguments": args})

    def string(self, key: str) -> str | None:
        value = self.fields.get(key)
        return value if isinstance(value, str) and value.strip() else None


def _title(item: CardItem, args: _Arguments) -> str:
    if isinstance(item, msp.ToolCallItem):
        query = _QUERY_ARGUMENTS.get(item.tool)
        for key in (query, *_TITLE_ARGUMENTS) if query else _TITLE_ARGUMENTS:
            value = args.string(key)
            if value is not None:
                return _bounded_title(value)
        return _bounded_title(item.tool or item.kind)
    if isinstance(item, msp.UserShellItem) and item.command_text.strip():
        return _bounded_title(item.command_text)
    delegated = delegated_title(item)  # a workflow's or subagent's own words
    return _bounded_title(delegated or f"{item.kind}: {item.status}")


def _bounded_title(text: str) -> str:
    return clip(text, TITLE_LIMIT_CHARS)


def _raw_input(item: CardItem, args: _Arguments) -> JsonValue | None:
    if isinstance(item, msp.UserShellItem):
        return {"command": cut_utf8(item.command_text, ARGS_LIMIT_BYTES)[0]}
    return args.raw_input


def _change(
    item: CardItem, args: _Arguments, facts: CardFacts
) -> tuple[acp.DiffToolCallContent | None, str | None]:
    if not isinstance(item, msp.ToolCallItem):
        return None, None
    return change_content(item.tool, args.fields, facts.before)


def tool_locations(fields: Mapping[str, JsonValue], cwd: str | None) -> list[acp.ToolCallLocation]:
    """Where a tool call's ``path`` argument points, absolute against the workspace ``cwd``."""
    path = fields.get("path")
    if not isinstance(path, str) or not path.strip():
        return []
    return [acp.ToolCallLocation(path=absolute_path(cwd, path))]


def refused_title(title: str) -> str:
    """``title`` marked as the title of a declined tool call."""
    return title if title.startswith(_REJECTED) else _bounded_title(_REJECTED + title)


def _card_text(
    item: CardItem,
    output: OutputBuffer | None,
    reference: acp.MuseOutputReference | None,
    policy: OutputPolicy,
    change_note: str | None = None,
    streamed: bool = False,
    status: acp.ToolCallStatus | None = None,
) -> tuple[str, list[str]]:
    """The card's output text and the notes that follow it; the streamed output, when there is
    any, is the text of a card that shows its stream (``streamed``) or publishes none;
    ``status`` is the card's, when the caller has it already."""
    published = (
        item.visible_output if isinstance(item, msp.ToolCallItem | msp.UserShellItem) else None
    )
    from_stream = output is not None and output.total_bytes > 0 and (streamed or not published)
    if from_stream and output is not None:
        text, total, cut = output.text(), output.total_bytes, output.capped
    else:
        whole = published or next((t for t in _fallback_texts(item) if t), "")
        text, cut = cut_utf8(whole, CARD_TEXT_LIMIT_BYTES)
        total = utf8_size(whole) if cut else 0
    notes: list[str] = []
    shortened = isinstance(item, msp.ToolCallItem) and bool(item.truncated)
    shortened = shortened and not (streamed and from_stream)  # Muse shortened what it published
    if shortened:
        notes.append("[Muse shortened this output before publishing it; the rest is not shown.]")
    if cut:
        notes.append(cut_note(total))
    if (status or tool_status(item.status)) == "failed":
        reason = item.failure_reason if isinstance(item, msp.ToolCallItem) else None
        if reason:
            if reason not in text:
                notes.append(f"[Failed: {cut_utf8(reason, _FAILURE_LIMIT_BYTES)[0]}]")
        else:
            notes.append(f"[Not completed: {item.status[:STATUS_LIMIT_CHARS]}.]")
    ref = stored_output(item)
    shown_all = not (cut or shortened) and ref is not None and utf8_size(text) >= ref.byte_len
    notes.extend(stored_output_notes(item, reference, policy, shown_all))
    if change_note is not None:
        notes.append(change_note)
    return text, notes


def _fallback_texts(item: CardItem) -> tuple[str | None, ...]:
    if isinstance(item, msp.ToolCallItem):
        return (item.failure_reason,)
    if isinstance(item, msp.SubagentItem):
        result = item.result
        return (
            (result.text, result.summary, item.fallback_text) if result else (item.fallback_text,)
        )
    if isinstance(item, msp.WorkflowItem):
        return (workflow_text(item), item.fallback_text)
    if isinstance(item, msp.UnknownItem):
        return (item.fallback_text,)
    return ()
