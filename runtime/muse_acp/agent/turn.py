"""One prompt turn on a Muse host, from ``turn/start`` until it settles.

The host's events for the session arrive in order through ``on_event`` (inline in the host
connection's read loop): each is translated into ACP updates and sent at once, so output is
relayed as it streams and never accumulated. Approvals and questions are handed to
``interactions``, which answers them in tasks of the turn.

A turn settles exactly once (``settle``), with a stop reason or an error, whichever comes first:
the host's ``turn/completed`` for this turn, a failure (host death, a rejected command, an
approval that cannot be answered), or a cancel. Cancellation always settles: ``turn/cancel`` is
sent (once the host acknowledged the turn), and if the host does not complete the turn within
the cancel budget, counted from the cancel, the prompt resolves ``cancelled`` anyway. A host
that did not end the turn itself (a cancel it never settled, a failure the adapter decided, a
deadline) is in an unknown state and is closed rather than reused. Events for any
other turn id (for example the late tail of a cancelled turn) are ignored, so one prompt never
receives another's output.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

import anyio
from anyio.abc import TaskGroup

from muse_acp.acp_types import StopReason
from muse_acp.agent import failures
from muse_acp.agent.config_options import turn_effort
from muse_acp.agent.interactions import Interactions
from muse_acp.agent.translate import TurnTranslator
from muse_acp.host.client import MspHost
from muse_acp.ids import new_uuid7
from muse_acp.msp_types import TurnInputPart, msp
from muse_acp.rpc import INTERNAL_ERROR, INVALID_REQUEST, ConnectionClosed, RpcError
from muse_acp.tasks import task_group
from muse_acp_wire import acp
from muse_acp_wire._base import WireModel

if TYPE_CHECKING:
    from muse_acp.agent.context import AgentContext
    from muse_acp.agent.session import AcpSession

logger: Final = logging.getLogger("muse_acp.agent")

ACTIVE_TURN_META: Final = "muse/activeTurnId"


class ActiveTurn:
    """The running turn of one session (see the module contract)."""

    def __init__(
        self,
        ctx: AgentContext,
        session: AcpSession,
        host: MspHost,
        translator: TurnTranslator,
    ) -> None:
        self._ctx = ctx
        self._session = session
        self._host = host
        self._translator = translator
        self.command_id = new_uuid7()
        self.turn_id: str | None = None
        self.cancel_requested = False
        self.host_unsettled = False
        """The host never confirmed the turn's end; its state is unknown."""
        self._settled = anyio.Event()
        self._outcome: StopReason | RpcError | None = None
        self._tasks: TaskGroup | None = None
        self.acknowledged = anyio.Event()
        self._interactions = Interactions(self)

    @property
    def ctx(self) -> AgentContext:
        return self._ctx

    @property
    def session(self) -> AcpSession:
        return self._session

    @property
    def host(self) -> MspHost:
        return self._host

    @property
    def tasks(self) -> TaskGroup | None:
        """The turn's task group while it runs (None before and after)."""
        return self._tasks

    @property
    def settled(self) -> bool:
        return self._settled.is_set()

    # -- settling -------------------------------------------------------------------------

    def settle(self, outcome: StopReason | RpcError) -> None:
        """Record the first outcome; a cancel turns any later success into ``cancelled``."""
        if self._settled.is_set():
            return
        if self.cancel_requested and not isinstance(outcome, RpcError):
            outcome = "cancelled"
        self._outcome = outcome
        self._settled.set()
        self._interactions.withdraw_all()

    def fail(self, error: RpcError) -> None:
        """Settle with ``error`` and ask the host to stop the turn (best effort).

        The host did not end the turn itself, so its state is unknown (the turn may still run
        or wait there) and it is not reused. A cancel asked for earlier wins over the error.
        """
        if self._settled.is_set():
            return
        self.host_unsettled = True
        self.settle("cancelled" if self.cancel_requested else error)
        if self._tasks is not None and self.turn_id is not None:
            self._tasks.start_soon(self._send_cancel)

    # -- running ------------------------------------------------------------------------

    async def run(self, parts: list[TurnInputPart]) -> StopReason:
        """Submit the turn and wait until it settles.

        Raises:
            RpcError: the turn failed (``data.failure`` says how and in which phase).
        """
        deadlines = self._ctx.config.deadlines
        session_id = self._session.session_id
        self._host.listen(session_id, self.on_event)
        try:
            async with task_group() as tasks:
                self._tasks = tasks
                tasks.start_soon(self._watch_host)
                if self.cancel_requested:
                    tasks.start_soon(self._cancel_flow)
                params = msp.TurnStartParams(
                    command_id=self.command_id, session_id=session_id, input=parts
                )
                effort = turn_effort(self._session.settings)
                if effort is not None:
                    # Only an explicit choice is sent; the host's default needs no member.
                    params.reasoning_effort = effort
                try:
                    with anyio.fail_after(deadlines.submit):
                        ack = await self._host.call("turn/start", params, msp.TurnStartResult)
                except TimeoutError:
                    self.fail(failures.deadline_exceeded("submitting", deadlines.submit, True))
                except ConnectionClosed:
                    await self._host_gone()
                except RpcError as error:
                    self.settle(failures.host_rejected("turn/start", error.code, error.message))
                else:
                    self._adopt(ack.turn_id)
                    self.acknowledged.set()
                    await self._publish_active_turn(self.turn_id)
                await self._settled.wait()
                tasks.cancel_scope.cancel()
        finally:
            self._host.unlisten(session_id, self.on_event)
            if self.acknowledged.is_set():
                with anyio.CancelScope(shield=True):
                    await self._publish_active_turn(None)
        outcome = self._outcome
        assert outcome is not None
        if isinstance(outcome, RpcError):
            raise outcome
        return outcome

    def _adopt(self, turn_id: str) -> None:
        if self.turn_id is None:
            self.turn_id = turn_id
            self._translator.turn_id = turn_id

    async def _watch_host(self) -> None:
        await self._host.dead.wait()
        await self._host_gone()

    async def _host_gone(self) -> None:
        """Settle a turn whose host went away: ``cancelled`` when a cancel was asked for, else
        failed, in the phase the turn was in, quoting how the host ended."""
        if not self._settled.is_set() and not self.cancel_requested:
            # A host's output closes a moment before its exit status and last stderr lines
            # are in, and the error must carry both.
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

    # -- steering -----------------------------------------------------------------------

    @property
    def steerable(self) -> bool:
        """True between the host's acknowledgement and the turn settling, unless cancelled."""
        return (
            self.acknowledged.is_set() and not self._settled.is_set() and not self.cancel_requested
        )

    async def steer(self, parts: list[TurnInputPart]) -> str:
        """Send one correction to this turn with ``turn/steer``; return the turn id Muse named.

        Sent at most once; a failure is never retried or turned into a new turn. If Muse does
        not acknowledge within the submit budget the outcome is unknown, so the turn fails.

        Raises:
            RpcError: the turn is no longer steerable, Muse refused the correction, its
                acknowledgement did not name this turn, or the host ended (the turn's own
                ``hostExited`` failure, which fails the turn too).
        """
        if not self.steerable or self.turn_id is None:
            raise RpcError(INVALID_REQUEST, "the turn has ended; there is no running turn to steer")
        params = msp.TurnSteerParams(
            command_id=new_uuid7(),
            session_id=self._session.session_id,
            expected_turn_id=self.turn_id,
            input=parts,
        )
        submit = self._ctx.config.deadlines.submit
        try:
            with anyio.fail_after(submit):
                ack = await self._host.call("turn/steer", params, msp.TurnCommandResult)
        except TimeoutError:
            # The correction may or may not have reached the model; the turn cannot go on
            # in an unknown state, and the steering caller hears why.
            self.fail(failures.deadline_exceeded("submitting", submit, True))
            raise RpcError(
                INTERNAL_ERROR,
                f"Muse did not acknowledge the correction within {submit:g}s, so whether it "
                "reached the turn is unknown; the turn was stopped. Check the session before "
                "sending it again.",
            ) from None
        except ConnectionClosed:
            await self._host_gone()
            await self._host.process.settle()
            code, stderr_tail = self._host.exit_summary()
            raise failures.host_exited("running", code, stderr_tail) from None
        except RpcError as error:
            raise RpcError(
                INVALID_REQUEST,
                f"Muse did not accept the correction for turn {self.turn_id}: {error.message}",
                error.data,
            ) from None
        if ack.status != "accepted" or ack.turn_id != self.turn_id:
            raise RpcError(
                INTERNAL_ERROR,
                f"Muse acknowledged the correction for turn {ack.turn_id} with status "
                f"{ack.status}, not for turn {self.turn_id}",
            )
        return ack.turn_id

    async def _publish_active_turn(self, turn_id: str | None) -> None:
        if not self._ctx.negotiated.any_steering:
            return
        update = acp.SessionInfoUpdateSessionUpdate(
            session_update="session_info_update", field_meta={ACTIVE_TURN_META: turn_id}
        )
        try:
            await self._ctx.send_update(self._session, update)
        except ConnectionClosed:
            logger.debug("client went away before the active turn could be announced")

    # -- cancelling ---------------------------------------------------------------------

    def request_cancel(self) -> None:
        """Start cancelling (idempotent); returns at once, the turn settles soon after."""
        if self.cancel_requested or self._settled.is_set():
            return
        self.cancel_requested = True
        self._interactions.withdraw_all()
        if self._tasks is not None:
            self._tasks.start_soon(self._cancel_flow)

    async def _cancel_flow(self) -> None:
        # One budget from the cancel on, whatever the host leaves unanswered: the turn/start
        # acknowledgement (the turn id ``turn/cancel`` needs), turn/cancel, or turn/completed.
        with anyio.move_on_after(self._ctx.config.deadlines.cancel):
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
        params = msp.TurnCancelParams(
            command_id=new_uuid7(), session_id=self._session.session_id, turn_id=self.turn_id
        )
        try:
            with anyio.fail_after(self._ctx.config.deadlines.submit):
                await self._host.call("turn/cancel", params, msp.TurnCommandResult)
        except (TimeoutError, RpcError) as error:
            logger.warning("turn/cancel for %s was not accepted: %s", self.turn_id, error)
            self.host_unsettled = True

    # -- host events --------------------------------------------------------------------

    async def on_event(self, method: str, params: WireModel) -> None:
        if isinstance(params, msp.TurnStartedParams):
            if params.command_id == self.command_id:
                self._adopt(params.turn_id)
        elif isinstance(params, msp.TurnCompletedParams):
            if params.turn_id == self.turn_id:
                self.settle(failures.stop_reason(params))
            return
        else:
            self._interactions.on_event(params)
        for update in self._translator.on_notification(method, params):
            await self._ctx.send_update(self._session, update)
