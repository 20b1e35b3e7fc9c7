"""The host events of one turn: held until the turn's id is known, then routed in order.

Contract: the turn ``listen``s to its session's events, which arrive in order through ``on_event``
(text deltas the host's event lane takes: ``take_delta``, straight to the relay unless they must
wait). They are held (at most ``MAX_HELD_EVENTS``; more fails the turn) until the turn's id is
known (``adopt``: the ``turn/start`` acknowledgement, or the ``turn/started`` with the turn's
``commandId``), then handled in arrival order: asks go to ``interactions``, the turn's own
``turn/completed`` ends it (its ``turn/unqueued``: ``cancelled``, it never ran), a ``view/gap`` is
filled by paging the missed range back (``GapFiller``), an unanswerable host request fails the
turn, a subagent with a session of its own waits for it (``subagents``), and the rest is relayed
(the translator drops other turns' items). A lead: a turn queued at Muse (``watch_leads``) that
sees another turn start before its own follows it (``LeadStarter``) until it settles, feeding it
the session's events (deltas straight to its ``take_delta``) but its own ones; a settled turn keeps
listening only while a lead it feeds still runs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any, Final, Literal, Protocol

from muse_acp.agent.errors import failures
from muse_acp.agent.translation import event_kinds
from muse_acp.agent.translation.view_events import GapFiller, PageReader
from muse_acp.agent.turns.interactions import Interactions
from muse_acp.agent.turns.relay import EventRelay, TurnOutlet
from muse_acp.agent.turns.subagent_views import SubagentViews
from muse_acp.agent.turns.submission import HeldEvents
from muse_acp.agent.turns.watchdog import SilenceWatch
from muse_acp.host.client import Listening, MspHost
from muse_acp.host.event_lane import DELTA
from muse_acp.host.unanswered import UnansweredRequest
from muse_acp.rpc import RpcError
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["MAX_HELD_EVENTS", "Lead", "LeadStarter", "RoutedTurn", "TurnEvents"]

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

    def settle(self, outcome: Literal["cancelled"]) -> None: ...

    async def announce_running(self) -> None:
        """A lead ended: announce the running turn (the client saw the lead's)."""

    @property
    def settled(self) -> bool: ...

    @property
    def cancel_requested(self) -> bool: ...


class Lead(Protocol):
    """A turn Muse runs ahead of a queued one, fed its events by it (``turn.ActiveTurn`` is one)."""

    events: TurnEvents

    @property
    def settled(self) -> bool: ...

    def request_cancel(self) -> None: ...


LeadStarter = Callable[[str], Lead]
"""Starts following the turn with the given id, which Muse has just started ahead of a queued
one; the turn it returns is fed the session's events by the queued one from now on."""

_OWN_LIFECYCLE: Final = (msp.TurnStartedParams, msp.TurnCompletedParams, msp.TurnUnqueuedParams)


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
        self._host: MspHost | None = None
        self._listening: Listening | None = None
        self._closing = False
        self._leads: LeadStarter | None = None
        """Set while the turn waits, queued, for its own ``turn/started``."""
        self._lead: Lead | None = None
        self.started_early: str | None = None
        """The turn's id from its ``turn/started``, held before the turn listened."""

    def listen(self, host: MspHost, session_id: str, held: HeldEvents | None = None) -> None:
        """Take ``session_id``'s events on ``host`` (in place of any other listener), those
        ``held`` since the turn's ``turn/start`` was written first (``submission``)."""
        self._host = host
        self._listening = host.listen(session_id, self.on_event, self.take_delta)
        if held is not None:
            self._take_held(held)

    def _take_held(self, held: HeldEvents) -> None:
        """Hold ``held``'s events as ``on_event`` would have; the turn's own ``turn/started``
        among them is adopted once the turn's tasks run (``started_early``)."""
        if held.overflowed is not None:
            self._turn.fail(failures.too_many_early_events(held.limit, held.overflowed))
        command_id, line = self._turn.command_id, self._held
        for method, params in held.events:
            if isinstance(params, msp.TurnStartedParams) and params.command_id == command_id:
                self.started_early = self.started_early or params.turn_id
            elif line is not None:
                line.append((method, params))
        held.events.clear()

    def stop_listening(self) -> None:
        """Stop taking the session's events (idempotent): at once, or once the lead ends."""
        self._closing = True
        if self._lead is None and self._listening is not None:
            self._listening.close()

    def watch_leads(self, leads: LeadStarter) -> None:
        """Muse queued the turn: a turn that starts before it is followed by ``leads``."""
        self._leads = leads

    @property
    def leading(self) -> bool:
        """A lead is followed: the host's silence and asks are its turn's concern meanwhile."""
        return self._lead is not None

    def cancel_lead(self) -> None:
        """Stop the lead, if one runs (Stop stops both)."""
        if self._lead is not None:
            self._lead.request_cancel()

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
            if self._lead is not None:
                await self._lead_event(method, params)
            elif not self.gaps.hold(method, params):
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
        elif isinstance(params, msp.TurnStartedParams):
            leads = self._leads
            if leads is not None and await self._started(method, params, leads):
                return
        elif isinstance(params, msp.TurnUnqueuedParams):
            if params.turn_id == self.turn_id:  # Muse dropped it: no turn/completed follows
                turn.settle("cancelled")
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

    # -- a lead: a turn Muse runs ahead of this queued one ---------------------------------
    async def _started(
        self, method: str, params: msp.TurnStartedParams, leads: LeadStarter
    ) -> bool:
        """Watching for a lead: True when ``params`` started one (it has taken the event)."""
        turn, lead = self._turn, self._lead
        if params.command_id == turn.command_id or params.turn_id == self.turn_id:
            self._leads = None  # the turn's own start: no lead comes now
            if lead is not None and self.lead_ended(lead):  # its end never came: Muse runs
                lead.request_cancel()  # this turn now
                await turn.announce_running()
            return False
        if lead is not None:
            return False
        lead = self._lead = leads(params.turn_id)
        if self._host is not None and self._listening is not None:
            # While it runs, the lead takes the deltas straight from the lane.
            sid = self._listening.session_id
            self._listening = self._host.listen(sid, self._lead_event, lead.events.take_delta)
        if turn.cancel_requested:
            lead.request_cancel()
        await lead.events.on_event(method, params)
        return True

    async def _lead_event(self, method: str, params: WireModel) -> None:
        """The listener while a lead runs: the turn's own lifecycle events are its own, the rest
        the lead's; the lead's end hands the session's events back."""
        turn, lead = self._turn, self._lead
        own = isinstance(params, _OWN_LIFECYCLE) and (
            params.turn_id == self.turn_id
            or (isinstance(params, msp.TurnStartedParams) and params.command_id == turn.command_id)
        )
        if lead is None or own:
            await self.on_event(method, params)
            return
        self._silence.heard()
        await lead.events.on_event(method, params)
        if lead.settled and self.lead_ended(lead):
            await turn.announce_running()  # before anything of this turn is handled

    def lead_ended(self, lead: Lead) -> bool:
        """``lead`` settled: the session's events are the turn's again, or nobody's if it has
        settled meanwhile. False: done already (the caller then announces nothing)."""
        if self._lead is not lead:
            return False
        self._lead = None
        if self._listening is not None and self._host is not None:
            if self._closing:
                self._listening.close()
            else:
                sid = self._listening.session_id
                self._listening = self._host.listen(sid, self.on_event, self.take_delta)
        return True
