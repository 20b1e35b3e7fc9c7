"""Translation of one turn's MSP notifications into ACP ``session/update`` payloads.

Contract: a ``TurnTranslator`` is fed every MSP notification of one turn, in order
(``on_notification``, or ``updates``, which leaves text chunks as ``PlainChunk`` for
``chunk_frames`` and the context window's use as ``usage.WindowUse``), and returns the ACP
updates to send for it, in order. It is pure and synchronous and keeps only bounded state per
item; built with ``replay=True`` it replays history for ``session/load``, forgetting the oldest
ended items (and cards) beyond ``ENDED_KEPT``. Live, events of another turn are dropped, so a
cancelled turn's tail never reaches the next prompt. Text is sent once (deltas, then only what
a snapshot adds, ``text_streams``); items that do work become tool cards kept in ``cards``
(``card_states.TurnCards``), whose status never goes back. Compaction items become compaction
updates (``compactions``); a todo list, the legacy ``plan``; each agent message a Plan mode turn
completes, also a Markdown plan (``plans``: the outlet decides what each client sees of them).
Turn lifecycle, approvals and questions belong to the caller; docs/architecture.md describes
the flow.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Literal, NamedTuple, TypeAlias

from muse_acp.agent.cards.card_states import TurnCards
from muse_acp.agent.cards.child_sessions import CHILDREN_META, ChildKind
from muse_acp.agent.cards.output_cards import BASELINE_OUTPUT, OutputPolicy
from muse_acp.agent.cards.progress import OutputBuffer, plan_update
from muse_acp.agent.cards.tool_cards import CardItem, tool_call_id
from muse_acp.agent.options.titles import named_title
from muse_acp.agent.translation.child_transcripts import ChildTranscripts, ChildUpdate
from muse_acp.agent.translation.compactions import compaction_updates
from muse_acp.agent.translation.event_kinds import ITEM_EVENTS
from muse_acp.agent.translation.goal_state import goal_update
from muse_acp.agent.translation.plans import led_by_plan_mode, markdown_plan
from muse_acp.agent.translation.text_streams import TextStream
from muse_acp.agent.translation.usage import WindowUse, window_use
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = [
    "ENDED_KEPT",
    "REASONING_PART_LIMIT",
    "TRANSLATED",
    "PlainChunk",
    "TextChunk",
    "TextFamily",
    "TurnTranslator",
    "Update",
    "utc_now",
]

logger: Final = logging.getLogger("muse_acp.agent")

REASONING_PART_LIMIT: Final = 500
"""Reasoning summary parts from this index on are ignored."""
ENDED_KEPT: Final = 1024
"""Replaying, the ended items (and their cards) kept for a later revision; older ones are
forgotten, as a later revision of an item a thousand items back is not expected."""

_ITEM_EVENTS: Final = frozenset({"item/started", "item/updated", "item/completed"})
TRANSLATED: Final = frozenset(
    {
        *_ITEM_EVENTS,
        "item/delta",
        "session/todoListChanged",
        "session/nameChanged",
        "session/goalChanged",
        "session/contextUsage",
        "approval/reviewing",
    }
)
"""The methods ``updates`` may turn into updates; every other gives none (so a replay need not
read its events: token totals and turn boundaries, a third of a history)."""
_SUMMARY_FIELD: Final = "summary."
_PART_SEPARATOR: Final = "\n\n"

_Family: TypeAlias = Literal["agent", "reasoning", "user", "card", "silent"]
TextChunk: TypeAlias = (
    acp.UserMessageChunkSessionUpdate
    | acp.AgentMessageChunkSessionUpdate
    | acp.AgentThoughtChunkSessionUpdate
)
"""The updates that carry message text: a user message, agent message or thought chunk."""
TextFamily: TypeAlias = Literal["agent", "reasoning", "user"]
"""Whose text a chunk carries: the agent's message, its reasoning, or the user's prompt."""


class PlainChunk(NamedTuple):
    """A text chunk as the translator finds it, before it is built as a ``TextChunk`` model."""

    family: TextFamily
    """``user`` (a ``user_message_chunk``), ``reasoning`` (``agent_thought_chunk``) or ``agent``
    (``agent_message_chunk``)."""
    message_id: str
    text: str

    def model(self) -> TextChunk:
        """The chunk as the update model ``on_notification`` gives."""
        return _chunk(self.family, self.message_id, self.text)


Update: TypeAlias = acp.SessionUpdate | PlainChunk | WindowUse | ChildUpdate
"""What ``updates`` gives: an update model, a text chunk or the context window's use
(``usage.WindowUse``) not built yet, or an update of a child session's transcript
(``child_transcripts``)."""


@dataclass(slots=True)
class _Tracked:
    """The folded state of one item."""

    family: _Family
    revision: int = 0
    ended: bool = False
    any_text_sent: bool = False
    streams: dict[int, TextStream] = field(default_factory=dict)
    call_id: str | None = None
    """The ``toolCallId`` of the item's card, once announced."""

    def stream(self, part: int) -> TextStream:
        stream = self.streams.get(part)
        if stream is None:  # not ``setdefault``: that would make a stream (and a hash) every call
            stream = self.streams[part] = TextStream()
        return stream


class TurnTranslator:
    """Turns the MSP notifications of one turn (or of a replayed history) into ACP updates.

    ``turn_id`` may be set at any time: the caller sets it as soon as ``turn/started`` or the
    ``turn/start`` ack reveals the turn, and filtering applies from then on.
    """

    def __init__(
        self,
        *,
        session_id: str,
        turn_id: str | None = None,
        replay: bool = False,
        output: OutputPolicy = BASELINE_OUTPUT,
        cwd: str | None = None,
        plan_mode: bool = False,
        stoppable_children: frozenset[ChildKind] = frozenset(),
    ) -> None:
        self.session_id = session_id
        self.plan_mode = plan_mode
        """Live: the turn runs in Plan mode, so its answer is also the plan (``plans``)."""
        self._plan_turn: str | None = None
        """Replay: the turn whose recorded input shows it ran in Plan mode, while it is the
        latest turn replayed."""
        self.turn_id = turn_id
        self.replay = replay
        self.output = output
        self.cards = TurnCards(session_id, cwd=cwd, output=output, replay=replay)
        """The state of this turn's tool cards (shared with its approvals)."""
        self._items: dict[str, _Tracked] = {}
        self._ended: dict[str, None] = {}
        """Replay: the ids of the ended items in ``_items``, oldest ending first."""
        self.children = ChildTranscripts(session_id, stoppable=stoppable_children)
        """The transcripts of the child sessions of this turn's delegated work."""

    def on_notification(self, method: str, params: WireModel) -> list[acp.SessionUpdate]:
        """The updates of the session itself for one notification; ``params`` is already parsed
        with the model that ``msp.CLIENT_NOTIFICATIONS`` names for ``method``."""
        return [
            update.model() if isinstance(update, PlainChunk | WindowUse) else update
            for update in self.updates(method, params)
            if not isinstance(update, ChildUpdate)
        ]

    def updates(self, method: str, params: WireModel) -> list[Update]:
        """``on_notification``, with text chunks left plain (see the module contract)."""
        if method not in TRANSLATED:
            return []
        if method in _ITEM_EVENTS and isinstance(params, msp.ItemEventParams):
            return self._on_item(params.item)
        if method == "item/delta" and isinstance(params, msp.ItemDeltaParams):
            return self._on_delta(params)
        if method == "session/todoListChanged" and isinstance(
            params, msp.SessionTodoListChangedParams
        ):
            return [plan_update(params.items)]
        if method == "session/nameChanged" and isinstance(params, msp.SessionNameChangedParams):
            title = named_title(params.name)
            if title is None:
                return []
            return [
                acp.SessionInfoUpdateSessionUpdate(
                    session_update="session_info_update", title=title, updated_at=utc_now()
                )
            ]
        if method == "session/goalChanged" and isinstance(params, msp.SessionGoalChangedParams):
            return [goal_update(params.goal)]
        if method == "session/contextUsage" and isinstance(params, msp.SessionContextUsageParams):
            usage = window_use(params)
            return [] if usage is None else [usage]
        if (  # Muse's reviewer decides an approval of this turn: its card says so
            method == "approval/reviewing"
            and isinstance(params, msp.ApprovalRequestParams)
            and not self.replay
            and params.turn_id == self.turn_id
        ):
            return [
                *self.cards.reviewing(params.tool_call_id or params.item_id, params.approval_id)
            ]
        return []

    def card_output(self, item_id: str) -> OutputBuffer | None:
        """The bounded output kept for a tool card of this turn, for read-only inspection."""
        tracked = self._items.get(item_id)
        call_id = None if tracked is None else tracked.call_id
        return None if call_id is None else self.cards.output_of(call_id)

    def unseen_tool(self, params: WireModel) -> tuple[str, str, str] | None:
        """The card id, tool name and arguments of a tool call of this turn seen for the first
        time, in progress: its tool has not run, so its file may be read for
        ``cards.keep_before`` (see ``file_changes.capture_before``)."""
        if not ITEM_EVENTS.holds(params):  # asked of every event: a delta, nearly always
            return None
        assert isinstance(params, msp.ItemEventParams)
        item = params.item
        if (
            not isinstance(item, msp.ToolCallItem)
            or item.status != "inProgress"
            or item.item_id in self._items
            or self._other_turn(item.turn_id)
        ):
            return None
        return tool_call_id(item), item.tool, item.args

    def _on_item(self, item: msp.Item) -> list[Update]:
        updates = self._item_updates(item)
        if self.replay:
            self._settle(item.item_id)
        return updates

    def _item_updates(self, item: msp.Item) -> list[Update]:
        if self._other_turn(item.turn_id):
            return []
        tracked = self._items.get(item.item_id)
        if tracked is None:
            tracked = self._items[item.item_id] = _Tracked(family=_family(item))
        elif item.revision <= tracked.revision:
            return []
        tracked.revision = item.revision
        tracked.ended = item.status != "inProgress"
        if isinstance(item, msp.AgentMessageItem):
            said = self._snapshot_part(tracked, item.item_id, 0, item.text, "agent")
            if item.status == "completed" and item.text.strip() and self._planning(item.turn_id):
                said.append(markdown_plan(item.text))
            return said
        if isinstance(item, msp.ReasoningItem):
            updates: list[Update] = []
            for part, text in enumerate(item.summary[:REASONING_PART_LIMIT]):
                updates += self._snapshot_part(tracked, item.item_id, part, text, "reasoning")
            return updates
        if isinstance(item, msp.UserMessageItem):
            if self.replay and not item.steered:  # a turn's own input, not a correction
                self._plan_turn = item.turn_id if led_by_plan_mode(item.text) else None
            if not self.replay or item.retracted:
                return []
            text = item.display_text or item.text
            return self._snapshot_part(tracked, item.item_id, 0, text, "user")
        if isinstance(item, msp.CompactionItem):
            return [*compaction_updates(item)]
        return self._card_sighting(tracked, item)

    def _settle(self, item_id: str) -> None:
        """Replay: note whether the item ended; forget the oldest ended beyond ``ENDED_KEPT``."""
        tracked = self._items.get(item_id)
        self._ended.pop(item_id, None)
        if tracked is None or not tracked.ended:
            return
        self._ended[item_id] = None
        for stream in tracked.streams.values():
            stream.compact()
        if len(self._ended) > ENDED_KEPT:
            oldest = next(iter(self._ended))
            del self._ended[oldest]
            call_id = self._items.pop(oldest).call_id
            if call_id is not None:
                self.cards.forget(call_id)

    def _planning(self, turn_id: str | None) -> bool:
        if not self.replay:
            return self.plan_mode
        return turn_id is not None and turn_id == self._plan_turn

    def _other_turn(self, turn_id: str | None) -> bool:
        if self.replay or self.turn_id is None or turn_id is None:
            return False
        return turn_id != self.turn_id

    def _on_delta(self, params: msp.ItemDeltaParams) -> list[Update]:
        tracked = self._items.get(params.item_id)
        # A delta naming no field (Muse declares the member optional) extends no stream we
        # know; the item's next snapshot carries its text, and only what is new is sent then.
        if tracked is None or tracked.ended or not params.delta or params.field is None:
            return []
        if tracked.family == "agent" and params.field == "text":
            return self._send_part(tracked, params.item_id, 0, params.delta, "agent")
        if tracked.family == "reasoning":
            part = _summary_part(params.field)
            if part is None:
                return []
            return self._send_part(tracked, params.item_id, part, params.delta, "reasoning")
        if tracked.family == "card" and tracked.call_id is not None and params.field == "output":
            return [*self.cards.streamed(tracked.call_id, params.delta)]
        return []

    def _snapshot_part(
        self, tracked: _Tracked, item_id: str, part: int, text: str, family: TextFamily
    ) -> list[Update]:
        stream = tracked.stream(part)
        was_diverged = stream.diverged
        suffix = stream.suffix(text)
        if suffix is None:
            if not was_diverged:
                logger.debug(
                    "text of item %s part %d diverged; sending no more of it", item_id, part
                )
            return []
        return self._send_part(tracked, item_id, part, suffix, family)

    def _send_part(
        self, tracked: _Tracked, item_id: str, part: int, text: str, family: TextFamily
    ) -> list[Update]:
        stream = tracked.stream(part)
        if not text or stream.diverged:
            return []
        shown = text
        if family == "reasoning" and stream.chars == 0 and tracked.any_text_sent:
            shown = _PART_SEPARATOR + text
        stream.add(text)
        tracked.any_text_sent = True
        return [PlainChunk(family, item_id, shown)]

    def _card_sighting(self, tracked: _Tracked, item: CardItem) -> list[Update]:
        if tracked.call_id is None:
            tracked.call_id = tool_call_id(item)
        cards: list[Update] = [*self.cards.sighting(tracked.call_id, item)]
        if not isinstance(item, msp.SubagentItem | msp.WorkflowItem):
            return cards
        link, children = self.children.sighting(item)
        for card in cards if link else ():
            if isinstance(card, acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate):
                card.field_meta = {**(card.field_meta or {}), CHILDREN_META: link}
        return [*cards, *children]


def _family(item: msp.Item) -> _Family:
    if isinstance(item, msp.AgentMessageItem):
        return "agent"
    if isinstance(item, msp.ReasoningItem):
        return "reasoning"
    if isinstance(item, msp.UserMessageItem):
        return "user"
    if isinstance(item, msp.CompactionItem):
        return "silent"
    return "card"


def _summary_part(field_name: str) -> int | None:
    if not field_name.startswith(_SUMMARY_FIELD):
        return None
    digits = field_name[len(_SUMMARY_FIELD) :]
    if not digits.isascii() or not digits.isdigit() or len(digits) > 3:
        return None
    part = int(digits)
    return part if part < REASONING_PART_LIMIT else None


def _chunk(family: TextFamily, item_id: str, text: str) -> TextChunk:
    content = acp.TextContentBlock(type="text", text=text)
    if family == "user":
        return acp.UserMessageChunkSessionUpdate(
            session_update="user_message_chunk", content=content, message_id=item_id
        )
    if family == "reasoning":
        return acp.AgentThoughtChunkSessionUpdate(
            session_update="agent_thought_chunk", content=content, message_id=item_id
        )
    return acp.AgentMessageChunkSessionUpdate(
        session_update="agent_message_chunk", content=content, message_id=item_id
    )


def utc_now() -> str:
    """Now, as the RFC 3339 UTC time ACP's ``updatedAt`` carries."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
