"""Progress during a turn: the plan, the running turn, and the output of running tools.

Contract: everything here is pure (no I/O) and bounded. ``plan_update`` turns the todo list into
a ``plan`` that replaces the client's (an unknown status kept in brackets; at most
``PLAN_ENTRY_LIMIT`` entries of ``PLAN_TEXT_LIMIT_BYTES``). ``active_turn_update`` names the
running turn for clients that steer. An ``OutputBuffer`` keeps the first
``CARD_TEXT_LIMIT_BYTES`` of a card's output and counts the rest; ``append`` says when the kept
text grew enough to show again, so the bytes shown per card stay proportional to the cap, never
to the output.
``output_progress_update`` is the in-progress update that shows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

from muse_acp.text import ELLIPSIS, cut_utf8, utf8_size
from muse_acp_wire import acp, msp

__all__ = [
    "CARD_TEXT_LIMIT_BYTES",
    "PLAN_ENTRY_LIMIT",
    "PLAN_TEXT_LIMIT_BYTES",
    "PROGRESS_MIN_BYTES",
    "OutputBuffer",
    "active_turn_update",
    "cut_note",
    "join_notes",
    "output_progress_update",
    "plan_update",
    "text_content",
]

PLAN_ENTRY_LIMIT: Final = 500
PLAN_TEXT_LIMIT_BYTES: Final = 8 * 1024
CARD_TEXT_LIMIT_BYTES: Final = 64 * 1024
"""Most UTF-8 bytes of output text a tool card shows (notes come on top)."""
PROGRESS_MIN_BYTES: Final = 1024
"""Least growth of a running card's text that is worth showing again."""
_STATUS_LIMIT_CHARS: Final = 64

_PlanStatus: TypeAlias = Literal["pending", "in_progress", "completed"]

_PLAN_STATUSES: Final[Mapping[str, _PlanStatus]] = MappingProxyType(
    {"pending": "pending", "inProgress": "in_progress", "completed": "completed"}
)
"""ACP plan status per Muse todo status; other statuses are shown as pending, labelled."""


def plan_update(items: Sequence[msp.TodoItem]) -> acp.PlanSessionUpdate:
    """The ACP plan that replaces the client's plan with ``items``."""
    return acp.PlanSessionUpdate(
        session_update="plan", entries=[_entry(item) for item in items[:PLAN_ENTRY_LIMIT]]
    )


ACTIVE_TURN_META: Final = "muse/activeTurnId"


def active_turn_update(turn_id: str | None) -> acp.SessionInfoUpdateSessionUpdate:
    """The ``session_info_update`` that names the running turn (see the module contract)."""
    meta = acp.MuseSessionInfoMeta.model_validate({ACTIVE_TURN_META: turn_id})
    dumped = meta.model_dump(mode="json", by_alias=True)
    # Only the turn: the model's other members (the goal) would read as announced, and cleared.
    return acp.SessionInfoUpdateSessionUpdate(
        session_update="session_info_update",
        field_meta={ACTIVE_TURN_META: dumped[ACTIVE_TURN_META]},
    )


def _entry(item: msp.TodoItem) -> acp.PlanEntry:
    status = _PLAN_STATUSES.get(item.status)
    if status is None:
        text = f"[{item.status[:_STATUS_LIMIT_CHARS]}] {item.text}"
        status = "pending"
    else:
        text = item.text
    kept, cut = cut_utf8(text, PLAN_TEXT_LIMIT_BYTES)
    if cut:
        kept = cut_utf8(text, PLAN_TEXT_LIMIT_BYTES - utf8_size(ELLIPSIS))[0] + ELLIPSIS
    return acp.PlanEntry(content=kept, priority="medium", status=status)


class OutputBuffer:
    """The output deltas of one tool card, bounded; see the module docstring."""

    __slots__ = ("_cap_shown", "_kept_bytes", "_parts", "_shown_bytes", "_total_bytes")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._kept_bytes = 0
        self._total_bytes = 0
        self._shown_bytes = 0
        self._cap_shown = False

    @property
    def kept_bytes(self) -> int:
        """UTF-8 size of the text kept (at most ``CARD_TEXT_LIMIT_BYTES``)."""
        return self._kept_bytes

    @property
    def total_bytes(self) -> int:
        """UTF-8 size of all output received, kept or not."""
        return self._total_bytes

    @property
    def capped(self) -> bool:
        """True once some output was dropped."""
        return self._total_bytes > self._kept_bytes

    def append(self, delta: str) -> bool:
        """Add one delta; True when the kept text should be shown now (then it counts as shown).

        Once a delta has been cut at the cap, later deltas are only counted, so the kept text
        is always a prefix of the output.
        """
        size = utf8_size(delta)
        capped = self.capped
        self._total_bytes += size
        if not capped:
            room = CARD_TEXT_LIMIT_BYTES - self._kept_bytes
            if size > room:
                delta, _ = cut_utf8(delta, room)
                size = utf8_size(delta)
            self._parts.append(delta)
            self._kept_bytes += size
        grown = self._kept_bytes - self._shown_bytes
        if (self.capped and not self._cap_shown) or grown >= max(
            PROGRESS_MIN_BYTES, self._shown_bytes // 4
        ):
            self.mark_shown()
            return True
        return False

    def mark_shown(self) -> None:
        """Record that the kept text as it is now was shown (for example on a whole card)."""
        self._shown_bytes = self._kept_bytes
        self._cap_shown = self.capped

    def text(self) -> str:
        # Joined lazily: the text is read far less often than deltas arrive.
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""


def output_progress_update(
    call_id: str, output: OutputBuffer, name: str | None = None
) -> acp.ToolCallUpdateSessionUpdate:
    """A running tool card's kept text so far, as its only content (with the tool's ``name``
    when known)."""
    text = join_notes(output.text(), [cut_note(output.total_bytes)] if output.capped else [])
    update = acp.ToolCallUpdateSessionUpdate(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="in_progress",
        content=[text_content(text)],
    )
    if name is not None:
        update.name = name  # assigned only when known: an unset member stays out of the dump
    return update


def cut_note(total_bytes: int) -> str:
    """The note on a card whose text was cut at ``CARD_TEXT_LIMIT_BYTES``."""
    return (
        f"[muse-acp shows the first {CARD_TEXT_LIMIT_BYTES} of {total_bytes} bytes of this"
        " output; the rest is not on this card.]"
    )


def join_notes(text: str, notes: Sequence[str]) -> str:
    """``text`` followed by ``notes``, one per line, after a blank line."""
    return "\n\n".join(part for part in (text, "\n".join(notes)) if part)


def text_content(text: str) -> acp.ContentToolCallContent:
    """Tool call content showing ``text``."""
    return acp.ContentToolCallContent(
        type="content", content=acp.TextContentBlock(type="text", text=text)
    )
