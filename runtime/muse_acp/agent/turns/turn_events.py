"""The host events of one turn: held until the turn's id is known, then routed in order.

Contract: a turn's session events arrive in order through ``on_event`` (text deltas the host's
delta lane takes: ``take_delta``, straight to the relay unless they must wait). They are held
(at most ``MAX_HELD_EVENTS``; a host that sends more fails the turn) until the turn's id is known
(``adopt``: the ``turn/start`` acknowledgement, or the ``turn/started`` with the turn's
``commandId``), then handled in arrival order: approvals and questions go to the turn's
``interactions``, its own ``turn/completed`` ends it, a ``view/gap`` is filled by paging the
missed range back (``GapFiller``, later live events held meanwhile), a host request nobody can
answer fails the turn, an event showing a subagent with a session of its own waits for that
session (``subagents``), and the rest is relayed (the translator drops other turns' items, so one
prompt never receives another's output).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any, Final, Protocol

from muse_acp.agent.errors import failures
from muse_acp.agent.translation import event_kinds
from muse_acp.agent.translation.view_events import GapFiller, PageReader
from muse_acp.agent.turns.interactions import Interactions
from muse_acp.agent.turns.relay import EventRelay, TurnOutlet
from muse_acp.agent.turns.subagent_views import SubagentViews
from muse_acp.agent.turns.watchdog import SilenceWatch
from muse_acp.host.delta_lane import METHOD as DELTA
from muse_acp.host.unanswered import UnansweredRequest
from muse_acp.rpc import RpcError
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["MAX_HELD_EVENTS", "RoutedTurn", "TurnEvents"]

MAX_HELD_EVENTS: Final = 4096
"""Events held back until the turn's id is known; a host that sends more fails the turn."""


class RoutedTurn(Protocol):
    """What routing its events needs of a turn (``turn.ActiveTurn`` is one)."""

    command_id: str
    interactions: Interactions
    subagents: SubagentViews

    def fail(self, error: RpcError) -> None: ...

    def complete(self, params: msp.TurnCompletedParams) -> None:
        """The host ended the turn (``params`` is the turn's own ``turn/completed``)."""

    def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None: ...


class TurnEvents:
    """The events of one turn on their way (see the module contract)."""

    def __init__(
        self,
        turn: RoutedTurn,
        relay: EventRelay,
        silence: SilenceWatch,
        read_page: PageReader,
        outlet: TurnOutlet,
    ) -> None:
        self._turn = turn
        self._relay = relay
        self._silence = silence
        self.turn_id: str | None = None
        """The turn's id at the host, once known (events of other turns are dropped then)."""
        self._held: deque[tuple[str, WireModel]] | None = deque()
        self.gaps = GapFiller(read_page, self._handle, MAX_HELD_EVENTS, turn.fail, outlet)

    def hold_early(self, early: list[tuple[str, WireModel]]) -> None:
        """Take ``early`` (the session's events from before the turn listened) as held events,
        first in line; ``early`` is emptied."""
        if early and self._held is not None:
            self._held.extend(early)
            early.clear()

    async def adopt(self, turn_id: str) -> None:
        """Take ``turn_id`` as the turn's, then handle the events held back until now."""
        if self.turn_id is not None:
            return
        self.turn_id = turn_id
        self._relay.translator.turn_id = turn_id
        held = self._held
        # Events arriving while the held ones are handled join the end of the line, so
        # arrival order holds; the line is gone only once it is empty.
        while held:
            method, params = held.popleft()
            if not self.gaps.hold(method, params):
                await self._handle(method, params)
        self._held = None

    async def on_event(self, method: str, params: WireModel) -> None:
        self._silence.heard()
        if (
            self.turn_id is None
            and isinstance(params, msp.TurnStartedParams)
            and params.command_id == self._turn.command_id
        ):
            await self.adopt(params.turn_id)
            return
        held = self._held
        if held is not None:
            if len(held) >= MAX_HELD_EVENTS:
                self._turn.fail(failures.too_many_early_events(MAX_HELD_EVENTS, method))
                return
            held.append((method, params))
        elif not self.gaps.hold(method, params):
            await self._handle(method, params)

    def take_delta(self, params: msp.ItemDeltaParams) -> Awaitable[None] | None:
        """``on_event`` for a delta the lane took: at once, unless it must wait (then the rest)."""
        if self._held is not None or self.gaps.holding:
            return self.on_event(DELTA, params)
        self._silence.heard()
        return self._relay.relay_now(params)

    async def _handle(self, method: str, params: WireModel) -> None:
        turn = self._turn
        if not event_kinds.TURN_LIFECYCLE.holds(params):  # nearly every event: items, deltas
            turn.interactions.on_event(params)
        elif isinstance(params, msp.TurnCompletedParams):
            if params.turn_id == self.turn_id:
                turn.complete(params)
            return
        elif isinstance(params, msp.ViewGapParams):
            self.gaps.open()
            turn.spawn(partial(self.gaps.fill, params))
            return
        elif isinstance(params, UnansweredRequest):  # the host waits on what we cannot answer
            turn.fail(failures.host_request_unanswerable(params.method))
            return
        if not turn.subagents.follows(method, params):
            await self._relay.relay(method, params)
