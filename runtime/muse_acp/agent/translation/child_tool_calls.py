"""The tool calls of each subagent, read from its own Muse session, as its child session's cards.

Contract: Muse keeps a subagent's own items in a session of its own (the ``childSessionId`` of
its ``subagent`` item), whose view reaches only a connection subscribed to it; what it asks
approval for comes on the parent's session naming it (``subagentOrigin``). A
``ChildToolCalls`` belongs to one parent (a turn, or a load) and, for each subagent ``sighted``
with such a session, reads that view forward from where it stopped (``catch_up``, with the
caller's ``view/page`` reader) and gives its tool calls as ``tool_call``/``tool_call_update``
``ChildUpdate``s under the child session's id, translated as the parent's cards are
(``translate.TurnTranslator`` replaying, tool name included). ``cards(child)`` are that child's
cards, for an approval asked in its name. A view that cannot be read is logged and the rest
skipped: the parent's turn goes on. Bounded: ``MAX_CHILDREN`` children (the oldest forgotten
first), ``MAX_PAGES`` pages of ``PAGE_SIZE`` events per read.
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
from muse_acp.agent.translation.translate import TurnTranslator
from muse_acp.agent.translation.view_events import PageReader, read_event
from muse_acp.rpc import RpcError
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["MAX_CHILDREN", "MAX_PAGES", "PAGE_SIZE", "ChildToolCalls"]

logger: Final = logging.getLogger("muse_acp.agent")

MAX_CHILDREN: Final = 256
"""Subagents whose session one parent keeps reading."""
PAGE_SIZE: Final = 200
MAX_PAGES: Final = 50
"""Pages of a child's view read at one time; the rest waits for the next read."""


@dataclass(slots=True)
class _Child:
    muse_session_id: str
    translator: TurnTranslator
    cursor: str | None = None


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
        return [
            ChildUpdate(session_id, update)
            for update in child.translator.updates(event.method, params)
            if isinstance(update, acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate)
        ]
