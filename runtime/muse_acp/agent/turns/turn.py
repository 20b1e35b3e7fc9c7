"""One turn on a Muse host, from ``turn/start`` (or ``rejoin``, one Muse runs) until it settles.

Contract: a prompt's turn follows the ``turn/start`` written for it (``submission``) and takes
the events held since. The session's host events go to the turn's ``events`` (``turn_events``:
held until the turn's id is known, then its own routed in order, others' dropped); approvals
and questions go to ``interactions``; a subagent's own session is followed for a client that
takes child sessions (``subagents``); what is shown is translated and sent at once (``relay``).
A turn Muse queued follows one Muse runs ahead of it with ``leads``, if given: Stop stops both,
and the lead's end announces this turn as the running one again (``turn_events``).

A turn settles exactly once (``settle``), with a stop reason or an error: the host's
``turn/completed``, a failure (in the phase it was awaited in; a silent host, ``watchdog``), or a
cancel, which always settles within the cancel budget. A host that did not end the turn itself
is not reused, and nothing of the turn follows the answer (the relay's ``UpdateGate``). A settled
turn stops listening (once a lead it feeds has ended): what Muse sends next is the session's.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Literal, Protocol, TypeVar

import anyio
from anyio.abc import TaskGroup

from muse_acp.agent.cards.progress import active_turn_update
from muse_acp.agent.errors import failures
from muse_acp.agent.hosting import hosts
from muse_acp.agent.options.config_options import MODES, SessionSettings
from muse_acp.agent.translation.translate import TurnTranslator, Update
from muse_acp.agent.turns.corrections import send_correction
from muse_acp.agent.turns.interactions import Interactions
from muse_acp.agent.turns.relay import EventRelay, StateObserver, TurnOutlet
from muse_acp.agent.turns.subagent_views import SubagentViews
from muse_acp.agent.turns.submission import Submission
from muse_acp.agent.turns.turn_events import MAX_HELD_EVENTS, LeadStarter, TurnEvents
from muse_acp.agent.turns.watchdog import SilenceWatch
from muse_acp.config import Deadlines
from muse_acp.host.client import MspHost
from muse_acp.ids import new_uuid7
from muse_acp.rpc import OutgoingRequest, RpcError
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp.tasks import task_group
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["MAX_HELD_EVENTS", "ActiveTurn", "TurnOptions", "TurnSession"]

logger: Final = logging.getLogger("muse_acp.agent")

R = TypeVar("R", bound=WireModel)

_CANCEL: Final = ("turn/cancel", msp.TurnCancelParams)


class TurnSession(Protocol):
    """What a turn needs of its session (``session.AcpSession`` is one)."""

    session_id: str
    settings: SessionSettings

    @property
    def outlet(self) -> TurnOutlet: ...
    async def ask_client(self, method: str, params: WireModel) -> JsonValue: ...


@dataclass(frozen=True, slots=True)
class TurnOptions:
    """What the connection negotiated that a turn needs, and its budgets."""

    deadlines: Deadlines
    forms: bool = False
    """The client can answer form elicitations (Muse's questions)."""
    announce_active_turn: bool = False
    """Steering was negotiated: announce the running turn's id in ``session_info_update``."""


class ActiveTurn:
    """The running turn of one session (see the module contract)."""

    interactions: Interactions
    events: TurnEvents

    def __init__(
        self,
        session: TurnSession,
        host: MspHost,
        translator: TurnTranslator,
        options: TurnOptions,
        state: StateObserver | None = None,
        *,
        command_id: str | None = None,
    ) -> None:
        self._session = session
        self._host = host
        self._outlet = session.outlet
        self.relay = EventRelay(translator, self.send_update, self._outlet, state)
        self._options = options
        self.command_id = command_id or new_uuid7()  # a submitted turn's is its ``turn/start``'s
        self.interrupts = False  # stop with turn/interrupt (Muse pauses a goal), not turn/cancel
        self.cancel_requested = False
        self.host_unsettled = False
        """The host never confirmed the turn's end; its state is unknown."""
        self._settled = anyio.Event()
        self._outcome: acp.StopReason | RpcError | None = None
        self._explanation: RpcError | None = None
        self._tasks: TaskGroup | None = None
        self.acknowledged = anyio.Event()
        self.leads: LeadStarter | None = None
        """Follows a turn Muse runs ahead of this one once it queued it (None: not watched)."""
        self.listens = True
        """False: the turn that follows it as its lead feeds it the session's events and
        announces the running turn at its end."""
        # Silence is looked at once per budget (by then the asks exist); a lead has its own.
        self._silence = SilenceWatch(
            options.deadlines.silence,
            lambda: self.interactions.waiting_on_client() or self.events.leading,
            session.session_id,
        )
        pages = partial(self.ask_host, "view/page", result_type=msp.ViewPageResult, phase="running")
        self.events = TurnEvents(self, self.relay, self._silence, pages, self._outlet)
        self.subagents = SubagentViews(translator, self._outlet, pages, self.events.gaps, self)
        self.interactions = Interactions(self, translator.cards, host, self.subagents)

    # -- what interactions and steering see (TurnPort, SteerTarget) -------------------------
    @property
    def session_id(self) -> str:
        return self._session.session_id

    @property
    def turn_id(self) -> str | None:
        """The turn's id at the host, once known (``turn_events``)."""
        return self.events.turn_id

    @property
    def settled(self) -> bool:
        return self._settled.is_set()

    @property
    def accepting(self) -> bool:
        return self._tasks is not None and not self.settled and not self.cancel_requested

    @property
    def automatic(self) -> Literal["approve", "reject"] | None:
        return MODES[self._session.settings.mode_id].automatic

    @property
    def forms(self) -> bool:
        return self._options.forms

    def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        if self._tasks is not None:
            self._tasks.start_soon(work)

    async def ask_client(self, method: str, params: WireModel) -> JsonValue:
        return await self._session.ask_client(method, params)

    async def ask_host(
        self, method: str, params: WireModel, result_type: type[R], phase: failures.Phase
    ) -> R:
        """``hosts.ask`` with the submit budget; a host that went away under the call is
        reported by the turn itself (in the phase the turn was in), never by the call."""
        async with self._asking(method, phase):
            return await self._host.call(method, params, result_type)

    @asynccontextmanager
    async def _asking(self, method: str, phase: failures.Phase) -> AsyncIterator[None]:
        """``hosts.asking`` with the submit budget, as ``ask_host`` asks."""
        budget = self._options.deadlines.submit
        try:
            async with hosts.asking(self._host, method, phase=phase, budget=budget):
                yield
        except RpcError:
            if self._host.dead.is_set():
                await self._host_gone()
            raise

    def settle(self, outcome: acp.StopReason | RpcError) -> None:
        """Record the first outcome; a cancel turns any later success into ``cancelled``."""
        if self._settled.is_set():
            return
        if self.cancel_requested and not isinstance(outcome, RpcError):
            outcome = "cancelled"
        self._outcome = outcome
        # Before the turn's own wait is released, so the watch returns before the turn's tasks
        # are cancelled: it is not one of them, and a cancelled task leaves its traceback.
        self._silence.stop()
        self._settled.set()
        self.interactions.withdraw_all()
        self.events.stop_listening()  # what Muse sends next is the session's (``background``)

    def complete(self, params: msp.TurnCompletedParams) -> None:
        """The host ended the turn: settle as it says, a failure as explained first, if so."""
        outcome = failures.stop_reason(params)
        failed = isinstance(outcome, RpcError)
        self.settle(self._explanation if failed and self._explanation else outcome)

    def explain_failure(self, error: RpcError) -> None:
        """Report ``error`` (something the client caused, such as a question it could not
        answer) if the host goes on to end the turn failed; the first explanation is kept."""
        self._explanation = self._explanation or error

    def fail(self, error: RpcError) -> None:
        """Settle with ``error`` and ask the host to stop the turn (best effort; its state is
        unknown now). An earlier cancel wins; a host that went away is reported by the turn."""
        if self._settled.is_set():
            return
        self.host_unsettled = True
        self.settle("cancelled" if self.cancel_requested else error)
        if self.turn_id is not None:
            self.spawn(self._send_cancel)

    # -- running ------------------------------------------------------------------------
    async def run(self, submission: Submission) -> acp.StopReason:
        """Follow the turn ``submission`` wrote (the turn's ``command_id`` is its) until it
        settles; the events it held are the turn's first.

        Raises:
            RpcError: the turn failed (``data.failure`` says how and in which phase).
        """
        return await self._follow(submission=submission)

    async def rejoin(self, turn_id: str, early: list[tuple[str, WireModel]]) -> acp.StopReason:
        """Follow ``turn_id``, a turn Muse already runs, until it settles; ``early`` (events of
        the session that came before, such as asks Muse sent again) go first. Raises as ``run``."""
        return await self._follow(turn_id=turn_id, early=early)

    async def _follow(
        self,
        *,
        submission: Submission | None = None,
        turn_id: str = "",
        early: list[tuple[str, WireModel]] | None = None,
    ) -> acp.StopReason:
        held = None if submission is None else submission.held
        if self.listens:
            self.events.listen(self._host, self.session_id, held)
        if early:
            self.events.hold_early(early)
        sent = None if submission is None else submission.sent
        forget_host: Callable[[], None] | None = None
        try:
            async with task_group() as tasks:
                self._tasks = tasks
                # Watched by a call, not a task: nothing is left to cancel of it at the end.
                forget_host = self._host.on_death(partial(self.spawn, self._host_gone))
                if self.cancel_requested:
                    tasks.start_soon(self._cancel_flow)
                if sent is None:
                    await self._rejoined(turn_id, tasks)
                elif not self.settled:  # what was held as it was sent may have failed it
                    if self.events.started_early is not None:  # its turn/started was held
                        await self.events.adopt(self.events.started_early)
                    await self._acknowledge(sent, tasks)
                await self._settled.wait()
                tasks.cancel_scope.cancel()  # what is left: a cancel's or a gap's work
        finally:
            self._tasks = None
            self._silence.stop()
            if forget_host is not None:
                forget_host()
            self.events.stop_listening()
            with anyio.CancelScope(shield=True):
                if isinstance(sent, OutgoingRequest):
                    await sent.withdraw()  # nothing to do once its answer was collected
                if self.acknowledged.is_set() and self.listens:
                    await self._publish_active_turn(None)
            if self.host_unsettled or not self.settled:
                # Whatever Muse still sends of a turn it did not end is not to follow the answer.
                self.relay.gate.close()
        outcome = self._outcome
        assert outcome is not None
        if isinstance(outcome, RpcError):
            raise outcome
        return outcome

    async def _acknowledge(self, sent: OutgoingRequest | RpcError, tasks: TaskGroup) -> None:
        """Wait for the host's answer to ``turn/start`` (``sent``) and follow the turn it names."""
        try:
            if isinstance(sent, RpcError):
                if self._host.dead.is_set():
                    await self._host_gone()  # reported by the turn, as ``ask_host`` does
                raise sent
            async with self._asking("turn/start", "submitting"):
                ack = await self._host.answer(sent, "turn/start", msp.TurnStartResult)
        except failures.HostRefusal as refused:
            self.settle(refused)  # the host refused the turn: nothing runs there
        except RpcError as failure:
            self.fail(failure)
        else:
            if ack.disposition == "queued" and self.leads is not None:
                self.events.watch_leads(self.leads)  # Muse may run a turn of its own first
            await self._rejoined(ack.turn_id, tasks)

    async def _rejoined(self, turn_id: str, tasks: TaskGroup) -> None:
        self.acknowledged.set()
        budget = self._silence.budget  # the error is made on silence only (redaction costs)
        tasks.start_soon(self._silence.watch, lambda: self.fail(failures.host_silent(budget)))
        await self.events.adopt(turn_id)
        await self._publish_active_turn(self.turn_id)

    async def _host_gone(self) -> None:
        """Settle a turn whose host went away: ``cancelled`` if asked for, else how it ended."""
        if not self._settled.is_set() and not self.cancel_requested:
            # The output closes before the exit status and stderr are in; the error needs both.
            await self._host.process.settle()
        if self._settled.is_set():
            return
        self.host_unsettled = True
        if self.cancel_requested:
            self.settle("cancelled")
            return
        phase: failures.Phase = "running" if self.acknowledged.is_set() else "submitting"
        code, stderr_tail = self._host.exit_summary()
        self.settle(failures.host_exited(phase, code, stderr_tail))

    @property
    def steerable(self) -> bool:
        """True between the host's acknowledgement and the turn settling, unless cancelled."""
        return self.acknowledged.is_set() and self.accepting

    async def steer(self, parts: list[msp.TurnInputPart]) -> str:
        """Send one correction to this turn (see ``corrections.send_correction``)."""
        return await send_correction(self, parts)

    async def announce_running(self) -> None:
        """Announce the running turn as a lead ends: this one, or none once it has settled."""
        await self._publish_active_turn(None if self.settled else self.turn_id)

    async def _publish_active_turn(self, turn_id: str | None) -> None:
        if self._options.announce_active_turn:
            await self.send_update(active_turn_update(turn_id))

    def request_cancel(self) -> None:
        """Start cancelling (idempotent); returns at once, the turn settles soon after."""
        if self.cancel_requested or self._settled.is_set():
            return
        self.cancel_requested = True
        self.interactions.withdraw_all()
        self.events.cancel_lead()  # Stop stops a turn Muse runs ahead of this one too
        self.spawn(self._cancel_flow)

    async def _cancel_flow(self) -> None:
        # One budget from the cancel on, whatever the host leaves unanswered: the turn/start
        # acknowledgement (the turn id ``turn/cancel`` needs), turn/cancel, or turn/completed.
        with anyio.move_on_after(self._options.deadlines.cancel):
            await self.acknowledged.wait()
            await self._send_cancel()
            await self._settled.wait()
        if not self._settled.is_set():
            logger.warning("host did not settle cancelled turn %s in time", self.turn_id)
            self.host_unsettled = True
            self.settle("cancelled")

    async def _send_cancel(self) -> None:
        if self.turn_id is None or self._host.dead.is_set():
            return
        method, model = ("turn/interrupt", msp.TurnInterruptParams) if self.interrupts else _CANCEL
        params = model(command_id=new_uuid7(), session_id=self.session_id, turn_id=self.turn_id)
        try:
            await self.ask_host(method, params, msp.TurnCommandResult, "cancelling")
        except RpcError as error:
            logger.warning("%s for %s was not accepted: %s", method, self.turn_id, error.message)
            self.host_unsettled = True

    # -- to the client ------------------------------------------------------------------
    async def send_update(self, update: Update) -> None:
        """Send ``update`` to the client, unless it went away or the gate closed (see the module
        contract); time it waits for the client is not the host's silence."""
        if not self.relay.gate.open:
            return
        if await self._outlet.send_unless_gone(update, self._silence.client_write):
            if self.settled or self._tasks is None:
                return  # the turn has ended (or the agent is stopping): nothing to stop
            logger.warning(
                "the client went away while turn %s of session %s was streaming; stopping it",
                self.turn_id,
                self.session_id,
            )
            self.request_cancel()
