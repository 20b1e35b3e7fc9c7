"""Relaying a session's host events to the client, during a turn and after it.

Contract: an ``EventRelay`` is given, in arrival order, the host events of one session that are
not a turn's lifecycle (the turn keeps ``turn/started``, ``turn/completed``, ``view/gap`` and
its asks). For each it lets the session's ``StateObserver`` report what changed
(``session_state``), reads an editing tool's file before its card is first shown
(``file_changes.capture_before``), then sends the translator's updates in order through
``send``, and tells the user what a waiting turn waits on (``turn_waits``) through the outlet.
``relay_now`` does the same for a delta without a coroutine unless something has to wait
(``send_now``, then ``send``); the first words of each text (a delta of another item than the
last) are written at once, not with whatever else the host's read brings, and an answer's also
hand the core to the client (``hand_over``: it reads them before the relay goes on, see
``_answers``). It keeps no state but the item it last streamed, so the relay of an ended turn
can go on updating its cards (``background``). Once its ``gate`` is closed it makes nothing of
any event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from muse_acp.agent.cards.file_changes import capture_before
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.translation.translate import PlainChunk, TurnTranslator, Update
from muse_acp.agent.translation.turn_waits import wait_notice
from muse_acp.host.event_lane import DELTA
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["EventRelay", "StateObserver", "TurnOutlet", "UpdateGate"]


class StateObserver(Protocol):
    """Takes note of the session state a host event reports (``session_state.SessionState``)."""

    async def observe(self, method: str, params: WireModel) -> Sequence[Update]:
        """Take note of ``params``; the updates that report what changed, in order."""
        ...


class TurnOutlet(Protocol):
    """A session's update outlet as its turns use it (``sessions.outlet.UpdateOutlet`` is one):
    ``send_nowait`` for a relay's ``send_now``, ``send_unless_gone`` for everything else,
    ``tell`` for a warning (``errors.notices``)."""

    @property
    def takes_children(self) -> bool:
        """Child sessions are sent to the client (``subagent_views`` reads them only then)."""

    def send_nowait(
        self, update: Update, *, now: bool = False, hand_over: bool = False
    ) -> bool: ...

    async def tell(self, notice: Notice) -> None: ...

    async def send_unless_gone(
        self,
        update: Update,
        write: Callable[[Awaitable[None]], Awaitable[None]] | None = None,
    ) -> bool: ...


class UpdateGate:
    """Whether one turn's updates may still be queued for the client: open from the start;
    its turn closes it, for good, before its prompt is answered (see ``turn``)."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open = True

    def close(self) -> None:
        self.open = False


def _answers(update: Update) -> bool:
    """``update`` is text of the agent's answer (not a thought): its first words are what the
    person waits for, and the client reads them before the relay goes on (``hand_over``). A
    thought's are not handed over: the answer streams close behind them, and measured, giving
    the core away there delays the answer more than it speeds the thought."""
    return isinstance(update, PlainChunk) and update.family == "agent"


class EventRelay:
    """Sends the ACP updates for one session's host events (see the module contract)."""

    def __init__(
        self,
        translator: TurnTranslator,
        send: Callable[[Update], Awaitable[None]],
        outlet: TurnOutlet,
        state: StateObserver | None = None,
    ) -> None:
        self.translator = translator
        self._send = send
        self._state = state
        self._send_now = outlet.send_nowait
        self._tell = outlet.tell
        self.gate = UpdateGate()
        self._streaming: str | None = None
        """The item the last delta was of."""

    async def relay(self, method: str, params: WireModel) -> None:
        if not self.gate.open:
            return
        if self._state is not None:
            for update in await self._state.observe(method, params):
                await self._send(update)
        unseen = self.translator.unseen_tool(params)
        if unseen is not None:  # an editing tool's file is read before its card is first shown
            await capture_before(self.translator.cards, *unseen)
        for translated in self.translator.updates(method, params):
            await self._send(translated)
        notice = wait_notice(params, self.translator.turn_id)
        if notice is not None:
            await self._tell(notice)

    def relay_now(self, params: msp.ItemDeltaParams) -> Awaitable[None] | None:
        """``relay`` of a delta: None once every update it makes went out through
        ``send_now``, else the sending of the rest, in order (see the module contract)."""
        if not self.gate.open:
            return None
        updates = self.translator.updates(DELTA, params)
        send_now = self._send_now
        # A text's first words go out at once: the rest of the read they came in (the item's
        # end, usage) is not what the user waits for.
        now = params.item_id != self._streaming
        self._streaming = params.item_id
        for index, update in enumerate(updates):
            if not send_now(update, now=now, hand_over=now and _answers(update)):
                return self._send_each(updates[index:])
        return None

    async def _send_each(self, updates: Sequence[Update]) -> None:
        for update in updates:
            await self._send(update)
