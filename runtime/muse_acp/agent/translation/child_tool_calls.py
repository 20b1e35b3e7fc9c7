"""What each subagent did and said, read from its own Muse session, for its child session.

Contract: Muse keeps a subagent's own items in a session of its own (the ``childSessionId`` of
its ``subagent`` item), whose view reaches only a connection subscribed to it; what it asks
approval for comes on the parent's session naming it (``subagentOrigin``). A
``ChildToolCalls`` belongs to one parent (a turn, or a load) and, for each subagent ``sighted``
with such a session, reads that view forward from where it stopped (``catch_up``, with the
caller's ``view/page`` reader) and gives, in order, its tool calls (``tool_call``/
``tool_call_update``, tool name included), agent messages and reasoning (``agent_message_chunk``,
``agent_thought_chunk``) as ``ChildUpdate``s under the child's session id, translated as the
parent's are (``translate.TurnTranslator`` replaying). ``last_said`` is the child's last agent
message read, ``repeats`` tells a handed-back line that only repeats it; ``cards(child)`` are
its cards, for an approval asked in its name. A view that cannot be read is logged and the rest
skipped. Bounded: ``MAX_CHILDREN`` children (oldest forgotten first), ``MAX_PAGES`` pages of
``PAGE_SIZE`` events per read, ``MAX_SAID_CHARS`` of a last message kept.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from muse_acp.agent.cards.card_states import TurnCards
from muse_acp.agent.cards.child_sessions import child_session_id
from muse_acp.agent.cards.output_cards import BASELINE_OUTPUT, OutputPolicy
from muse_acp.agent.translation.child_transcripts import ChildUpdate
from muse_acp.agent.translation.event_kinds import ITEM_EVENTS
from muse_acp.agent.translation.translate import PlainChunk, TurnTranslator
from muse_acp.agent.translation.view_events import PageReader, read_event
from muse_acp.rpc import RpcError
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["MAX_CHILDREN", "MAX_PAGES", "MAX_SAID_CHARS", "PAGE_SIZE", "ChildToolCalls"]

logger: Final = logging.getLogger("muse_acp.agent")

MAX_CHILDREN: Final = 256
"""Subagents whose session one parent keeps reading."""
PAGE_SIZE: Final = 200
MAX_PAGES: Final = 50
"""Pages of a child's view read at one time; the rest waits for the next read."""
MAX_SAID_CHARS: Final = 64 * 1024
"""Longest last message kept to compare with what the child hands back (Muse's result text is
at most 32 KiB): a longer one is not compared."""


@dataclass(slots=True)
class _Child:
    muse_session_id: str
    translator: TurnTranslator
    cursor: str | None = None
    said: tuple[str, str | None] | None = None
    """The id and text (as far as read; None past the bound) of the last agent message read."""


class ChildToolCalls:
    """The tool cards of one parent's subagents (see the module contract)."""

    def __init__(
        self, parent_id: str, *, cwd: str | None = None, output: OutputPolicy = BASELINE_OUTPUT
    ) -> None:
        self.parent_id = parent_id
        self._cwd = cwd
        self._output = output
        self._children: dict[str, _Child] = {}

    def sighted(self, params: WireModel) -> str | None:
        """The child session id of the subagent an item event of the parent shows, once it has
        a Muse session of its own (None for any other event)."""
        if not ITEM_EVENTS.holds(params):
            return None
        assert isinstance(params, msp.ItemEventParams)
        item = params.item
        if not isinstance(item, msp.SubagentItem) or not item.child_session_id:
            return None
        return self.note(item.subagent_id, item.child_session_id)

    def origin(self, origin: msp.ApprovalSubagentOrigin) -> str:
        """The child session id of the subagent an approval names, noted as ``sighted``."""
        return self.note(origin.subagent_id, origin.child_session_id)

    def note(self, subagent_id: str, muse_session_id: str) -> str:
        """Take note of subagent ``subagent_id``'s Muse session; its child session id."""
        child_id = child_session_id(self.parent_id, "subagent", subagent_id)
        known = self._children.get(child_id)
        if known is None or known.muse_session_id != muse_session_id:
            while len(self._children) >= MAX_CHILDREN:
                del self._children[next(iter(self._children))]
            translator = TurnTranslator(
                session_id=child_id, replay=True, output=self._output, cwd=self._cwd
            )
            self._children[child_id] = _Child(muse_session_id, translator)
        return child_id

    def cards(self, child_id: str) -> TurnCards | None:
        """The cards of the child session ``child_id`` (None for a child not noted)."""
        child = self._children.get(child_id)
        return None if child is None else child.translator.cards

    def last_said(self, child_id: str) -> str | None:
        """The text of the last agent message read from child ``child_id``'s session."""
        child = self._children.get(child_id)
        said = None if child is None else child.said
        return None if said is None else said[1]

    def repeats(self, update: ChildUpdate) -> bool:
        """Whether ``update`` is the line of what a child handed back that says what the
        child's own session last said (read already), and so need not be said again."""
        if not update.handed_back or not isinstance(
            update.update, acp.AgentMessageChunkSessionUpdate
        ):
            return False
        content = update.update.content
        said = self.last_said(update.session_id)
        return isinstance(content, acp.TextContentBlock) and content.text == said

    async def catch_up(self, child_id: str, read_page: PageReader) -> list[ChildUpdate]:
        """The child's card updates for the events of its Muse session not read yet."""
        child = self._children.get(child_id)
        if child is None:
            return []
        updates: list[ChildUpdate] = []
        for _ in range(MAX_PAGES):
            start = child.cursor
            params = msp.ViewPageParams(
                session_id=child.muse_session_id, limit=PAGE_SIZE, cursor=start, direction="forward"
            )
            try:
                page = await read_page(params)
            except RpcError as error:
                logger.warning("could not read subagent session %s: %s", child_id, error.message)
                break
            for event in page.events:
                updates += self._translate(child, event)
            if page.next_cursor is None or page.next_cursor == start:
                break
            child.cursor = page.next_cursor
        return updates

    def _translate(self, child: _Child, event: msp.ViewEvent) -> list[ChildUpdate]:
        cursor = event.params.get("viewCursor")
        if isinstance(cursor, str):
            child.cursor = cursor  # the next read starts after the last event read
        params = read_event(event)
        if params is None:
            return []
        session_id = child.translator.session_id
        updates: list[ChildUpdate] = []
        for update in child.translator.updates(event.method, params):
            if isinstance(update, acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate):
                updates.append(ChildUpdate(session_id, update))
            elif isinstance(update, PlainChunk) and update.family != "user":
                # What it was asked is the child's first line already (``child_transcripts``).
                if update.family == "agent":
                    _hear(child, update)
                updates.append(ChildUpdate(session_id, update.model()))
        return updates


def _hear(child: _Child, chunk: PlainChunk) -> None:
    """Note a chunk of the child's agent message: the last message's text grows or starts."""
    said = child.said
    if said is None or said[0] != chunk.message_id:
        text: str | None = chunk.text
    else:
        text = None if said[1] is None else said[1] + chunk.text
    if text is not None and len(text) > MAX_SAID_CHARS:
        text = None
    child.said = (chunk.message_id, text)
