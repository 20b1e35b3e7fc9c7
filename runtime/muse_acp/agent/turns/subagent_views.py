"""Following a turn's subagents into their own Muse sessions, for a client that takes child
sessions.

Contract: a ``SubagentViews`` belongs to one turn (its ``parent`` translator's session, cwd and
output policy apply to the children's cards). ``follows`` is shown each event the turn is to relay:
one that shows a subagent with a Muse session of its own is relayed only after that session's
events not read yet were read (``ChildToolCalls.catch_up``) and the child's tool cards and words
sent, so they precede the child's new status; the turn's later events wait meanwhile
(``GapFiller.defer``). ``asking`` is told an approval Muse asks for a subagent
(``subagentOrigin``): it reads the child's session first, so the card the approval is about is
shown in the child, and gives the child session's id and cards to ask it with. Nothing is read, and
``asking`` gives None (the approval is asked on the parent as before), when the client does not
take child sessions (the outlet's ``takes_children``: it alone decides what a client is sent).
Reads are one at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any, Protocol

import anyio

from muse_acp.agent.cards.card_states import TurnCards
from muse_acp.agent.translation.child_tool_calls import ChildToolCalls
from muse_acp.agent.translation.translate import TurnTranslator, Update
from muse_acp.agent.translation.view_events import GapFiller, PageReader
from muse_acp.agent.turns.relay import EventRelay
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["ChildOutlet", "FollowingTurn", "SubagentViews"]


class ChildOutlet(Protocol):
    """The turn's outlet, as far as children go (``outlet.UpdateOutlet`` is one)."""

    @property
    def takes_children(self) -> bool: ...


class FollowingTurn(Protocol):
    """What reading children needs of its turn (``turn.ActiveTurn`` is one)."""

    relay: EventRelay

    async def send_update(self, update: Update) -> None: ...

    def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None: ...


class SubagentViews:
    """The subagent sessions one turn follows (see the module contract)."""

    def __init__(
        self,
        parent: TurnTranslator,
        outlet: ChildOutlet,
        read_page: PageReader,
        gaps: GapFiller,
        turn: FollowingTurn,
    ) -> None:
        cards = parent.cards
        self._calls = ChildToolCalls(parent.session_id, cwd=cards.cwd, output=cards.output)
        self._wanted = outlet.takes_children
        if self._wanted:  # a result that repeats the child's own last words is not said twice
            parent.children.own_words = self._calls.last_said
        self._read_page = read_page
        self._gaps = gaps
        self._send = turn.send_update
        self._relay = turn.relay.relay
        self._spawn = turn.spawn
        self._reading = anyio.Lock()

    def follows(self, method: str, params: WireModel) -> bool:
        """Take over relaying an event of the turn that shows a subagent with a session of its
        own: it is relayed once that session was read (True); False: relay it now."""
        child = self._calls.sighted(params) if self._wanted else None
        if child is None:
            return False
        if not self._gaps.defer(partial(self._catch_up, child, method, params)):
            self._spawn(self._gaps.drain)
        return True

    async def asking(self, origin: msp.ApprovalSubagentOrigin) -> tuple[str, TurnCards] | None:
        """The child session an approval for subagent ``origin`` is asked in, and its cards."""
        if not self._wanted:
            return None
        child = self._calls.origin(origin)
        await self._catch_up(child)
        cards = self._calls.cards(child)
        return None if cards is None else (child, cards)

    async def _catch_up(
        self, child: str, method: str | None = None, params: WireModel | None = None
    ) -> None:
        async with self._reading:
            for update in await self._calls.catch_up(child, self._read_page):
                await self._send(update)
        if method is not None and params is not None:
            await self._relay(method, params)
