"""The tool cards of one turn: what each card showed the client, so that it only moves forward.

Contract: a ``TurnCards`` keeps, by ``toolCallId``, each card's output (``OutputBuffer``), the
highest status the client was shown, its title, the file text an editing tool saw before it ran
and who declined its approval. It is pure and synchronous; the caller reads files and sends
updates. A status only moves forward (``pending``, ``in_progress``, then ``completed`` or
``failed``), also through permission requests. ``wants_before`` names the file to read once per
editing card, before the tool runs, at most ``TURN_FILE_TEXT_LIMIT_BYTES`` per turn.
``refused`` marks a denied approval (shown as rejected; ACP's status is ``failed``).
``edited_paths`` are the absolute paths of the editing tools whose cards completed (live). Under
``OutputPolicy.terminal`` a shell card not declined shows a terminal (``terminal_cards``):
``streamed`` sends its deltas as terminal chunks, and ``sighting`` may then give two updates.
``forget`` drops an ended card's state (a replay's translator bounds its cards with it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

from muse_acp.agent.asks.permissions import PermissionCard
from muse_acp.agent.cards.file_changes import FileBefore, absolute_path, change_content, edit_path
from muse_acp.agent.cards.output_cards import BASELINE_OUTPUT, OutputPolicy
from muse_acp.agent.cards.progress import OutputBuffer, output_progress_update, text_content
from muse_acp.agent.cards.terminal_cards import TerminalStream, info_meta, is_shell
from muse_acp.agent.cards.tool_cards import (
    CardFacts,
    CardItem,
    refused_title,
    tool_arguments,
    tool_call,
    tool_call_update,
    tool_locations,
)
from muse_acp.text import utf8_size
from muse_acp_wire import acp, msp

__all__ = ["TURN_FILE_TEXT_LIMIT_BYTES", "Refusal", "TurnCards"]

Refusal: TypeAlias = Literal["user", "client", "mode"]
"""Who declined a tool call's approval: the user, the client (it cancelled the permission
request), or the session's mode (Auto-reject)."""

TURN_FILE_TEXT_LIMIT_BYTES: Final = 8 * 1024 * 1024
"""Most UTF-8 bytes of file text kept for the diffs of one turn."""

_RANKS: Final[Mapping[acp.ToolCallStatus, int]] = MappingProxyType(
    {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2}
)
_REFUSALS: Final[Mapping[Refusal, str]] = MappingProxyType(
    {
        "user": "[Rejected: the user did not allow this tool call.]",
        "client": (
            "[Rejected: the client cancelled the permission request, so muse-acp declined this "
            "tool call.]"
        ),
        "mode": "[Rejected: the session's Auto-reject mode declined this tool call.]",
    }
)
_BUDGET_NOTE: Final = (
    f"[muse-acp already keeps {TURN_FILE_TEXT_LIMIT_BYTES // (1024 * 1024)} MiB of file text "
    "for this turn's diffs, so it did not read this file and no diff is shown.]"
)


@dataclass(slots=True)
class _Card:
    """One tool card of the turn."""

    output: OutputBuffer = field(default_factory=OutputBuffer)
    announced: bool = False
    """Its ``tool_call`` was sent."""
    shown: acp.ToolCallStatus | None = None
    """The highest status the client was shown."""
    title: str = ""
    name: str | None = None
    """The tool's name as its last whole card gave it."""
    before: FileBefore | None = None
    asked_before: bool = False
    """Its file was (or is being) read, or will never be."""
    refusal: Refusal | None = None
    terminal: TerminalStream | None = None
    """What its terminal was sent, when it shows one (``terminal_cards``)."""

    def advance(self, status: acp.ToolCallStatus) -> acp.ToolCallStatus:
        """``status``, or the one already shown when ``status`` would go back."""
        if self.shown is not None and _RANKS[status] < _RANKS[self.shown]:
            return self.shown
        self.shown = status
        return status


class TurnCards:
    """The tool cards of one turn (see the module contract)."""

    def __init__(
        self,
        session_id: str,
        *,
        cwd: str | None = None,
        output: OutputPolicy = BASELINE_OUTPUT,
        replay: bool = False,
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.output = output
        self.replay = replay
        self._cards: dict[str, _Card] = {}
        self._plain = CardFacts(cwd=cwd)
        """The facts of most cards, made once: nothing read before, declined or in a terminal."""
        self._kept_bytes = 0
        self._edited: set[str] = set()

    @property
    def edited_paths(self) -> frozenset[str]:
        """The files of the editing tools that completed (see the module contract)."""
        return frozenset(self._edited)

    def output_of(self, call_id: str) -> OutputBuffer | None:
        card = self._cards.get(call_id)
        return None if card is None else card.output

    def forget(self, call_id: str) -> None:
        """Drop the card's state: a later sighting announces it anew."""
        self._cards.pop(call_id, None)

    def sighting(self, call_id: str, item: CardItem) -> list[acp.SessionUpdate]:
        """The whole card for ``item``'s latest revision: ``tool_call`` the first time; a card
        shown as a terminal that ends at its first sighting is ended by a second update."""
        card = self._cards.setdefault(call_id, _Card())
        card.output.mark_shown()
        card.asked_before = True  # the tool may run from now on: a later read is not "before"
        refusal = None if card.refusal is None else _REFUSALS[card.refusal]
        if (
            card.terminal is None
            and not card.announced
            and self.output.terminal
            and refusal is None
            and is_shell(item)
        ):
            card.terminal = TerminalStream(call_id)
        terminal = card.terminal is not None
        facts = self._plain
        if card.before is not None or refusal is not None or terminal:
            facts = CardFacts(cwd=self.cwd, before=card.before, refusal=refusal, terminal=terminal)
        build = tool_call_update if card.announced else tool_call
        update = build(
            self.session_id, item, card.output, self.output, call_id=call_id, facts=facts
        )
        first = not card.announced
        card.announced = True
        update.status = card.advance(update.status or "pending")
        card.title = update.title or card.title
        card.name = update.name or card.name
        if (
            update.status == "completed"
            and not self.replay  # no turn's edits are reported after a replay
            and card.refusal is None
            and isinstance(item, msp.ToolCallItem)
        ):
            self._note_edit(item.tool, item.args)
        if card.terminal is None:
            return [update]
        return self._in_terminal(card, call_id, item, update, first)

    def _in_terminal(
        self,
        card: _Card,
        call_id: str,
        item: CardItem,
        update: acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate,
        first: bool,
    ) -> list[acp.SessionUpdate]:
        """A terminal card's sighting: its terminal named on the first, closed on the one that
        ends it (see ``terminal_cards``)."""
        stream = card.terminal
        assert stream is not None
        updates: list[acp.SessionUpdate] = [update]
        if first:
            update.field_meta = {**(update.field_meta or {}), **info_meta(call_id, self.cwd)}
        if update.status in ("completed", "failed") and not stream.exited:
            shown = getattr(item, "visible_output", None) or card.output.text()
            closing = stream.closing(item, shown)
            if first:  # a client reads the terminal's output and exit on updates only
                updates.append(_bare_update(call_id, card.name))
            target = updates[-1]
            target.field_meta = {**(target.field_meta or {}), **closing}
        return updates

    def _note_edit(self, tool: str, args: str) -> None:
        path = edit_path(tool, tool_arguments(args))
        if path is not None and os.path.isabs(target := absolute_path(self.cwd, path)):
            self._edited.add(target)

    def streamed(self, call_id: str, delta: str) -> list[acp.SessionUpdate]:
        """Output for a running card: a terminal chunk for a card shown as a terminal, else an
        update when the kept text is worth showing again."""
        card = self._cards.get(call_id)
        if card is None:
            return []
        grown = card.output.append(delta)
        if (card.shown or "") in ("completed", "failed"):
            return []
        if card.terminal is not None:
            meta = card.terminal.chunk(delta)
            if meta is None:
                return []
            chunk = _bare_update(call_id, card.name)
            chunk.status = card.advance("in_progress")
            chunk.field_meta = meta
            return [chunk]
        if not grown:
            return []
        card.advance("in_progress")
        return [output_progress_update(call_id, card.output, card.name)]

    def wants_before(self, call_id: str, tool: str, args: str) -> str | None:
        """The path to read for this card's diff now, or None (see the module contract)."""
        card = self._cards.get(call_id)
        if self.replay or self.cwd is None or (card is not None and card.asked_before):
            return None
        path = edit_path(tool, tool_arguments(args))
        if path is None:
            return None
        card = self._cards.setdefault(call_id, _Card())
        card.asked_before = True
        if self._kept_bytes >= TURN_FILE_TEXT_LIMIT_BYTES:
            card.before = FileBefore(absolute_path(self.cwd, path), note=_BUDGET_NOTE)
            return None
        return path

    def keep_before(self, call_id: str, before: FileBefore) -> None:
        """Record what the card's file held before the tool ran (the first read wins)."""
        card = self._cards.setdefault(call_id, _Card())
        if card.before is None:
            card.before = before
            self._kept_bytes += utf8_size(before.text) if before.text is not None else 0

    def permission(self, call_id: str, tool: str, args: str) -> PermissionCard:
        """What the permission request for this card shows of it."""
        card = self._cards.setdefault(call_id, _Card())
        card.name = card.name or tool or None
        status: acp.ToolCallStatus | None = None
        if card.shown is None:
            status = card.advance("pending")
        fields = tool_arguments(args)
        diff, note = change_content(tool, fields, card.before)
        content: list[acp.ToolCallContent] = [] if diff is None else [diff]
        if note is not None:
            content.append(text_content(note))
        return PermissionCard(status, tuple(content), tuple(tool_locations(fields, self.cwd)))

    def reviewing(self, call_id: str, approval_id: str) -> list[acp.SessionUpdate]:
        """The update saying that Muse's reviewer decides the card's approval (``approval/
        reviewing``): its title says so until the card's next update, and ``_meta`` names the
        approval; nothing for a card not shown yet (the approval's own request shows it)."""
        card = self._cards.get(call_id)
        if card is None or not card.announced:
            return []
        update = _bare_update(call_id, card.name)
        update.title = REVIEWING_TITLE.format(title=card.title or card.name or "tool call")
        update.field_meta = {REVIEW_META: {"state": "reviewing", "approvalId": approval_id}}
        return [update]

    def refused(self, call_id: str, refusal: Refusal) -> list[acp.SessionUpdate]:
        """Record that muse-acp denied the card's approval; the update for a card that already
        failed (the host may finish the tool before it answers the decision)."""
        card = self._cards.setdefault(call_id, _Card())
        if card.refusal is not None:
            return []
        card.refusal = refusal
        if not card.announced or card.shown != "failed":
            return []
        card.title = refused_title(card.title)
        update = acp.ToolCallUpdateSessionUpdate(
            session_update="tool_call_update",
            tool_call_id=call_id,
            title=card.title,
            status="failed",
            content=[text_content(_REFUSALS[refusal])],
        )
        if card.name is not None:
            update.name = card.name
        return [update]


REVIEW_META: Final = "muse/review"
"""The ``_meta`` key of a card whose approval Muse's own reviewer is deciding."""
REVIEWING_TITLE: Final = "Muse's reviewer is checking: {title}"


def _bare_update(call_id: str, name: str | None) -> acp.ToolCallUpdateSessionUpdate:
    """A ``tool_call_update`` naming only the card (and its tool, when known)."""
    update = acp.ToolCallUpdateSessionUpdate(
        session_update="tool_call_update", tool_call_id=call_id
    )
    if name is not None:
        update.name = name  # assigned only when known: an unset member stays out of the dump
    return update
