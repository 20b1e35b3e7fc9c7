"""The line of corrections waiting to steer one session's running turn.

Contract: admitted corrections wait in one FIFO ``SteeringQueue`` per session, at most
``MAX_WAITING`` of them (-32600 beyond), and are sent one at a time. When its turn comes, a
correction is sent only if the turn it captured is still the session's running turn, with the
same id, still accepting steering; otherwise it fails (-32600) rather than reach a successor. A
correction is sent once and never retried, inside the caller's ``commit`` (the steering
request's: a correction withdrawn while it waits is never sent, one being sent is not stopped).
``close`` fails every waiting correction at once (the session closed). The queue knows a turn
only through ``SteerTarget``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Final, Protocol

import anyio

from muse_acp.agent.turns.work import CommitPoint
from muse_acp.rpc import INTERNAL_ERROR, INVALID_REQUEST, RpcError
from muse_acp_wire import msp

__all__ = ["MAX_WAITING", "SteerTarget", "SteeringQueue", "Ticket"]

MAX_WAITING: Final = 16
"""Corrections that may wait per session behind the one being sent."""


class SteerTarget(Protocol):
    """What steering needs of a running turn (``turn.ActiveTurn`` is one)."""

    @property
    def turn_id(self) -> str | None: ...

    @property
    def steerable(self) -> bool: ...

    async def steer(self, parts: list[msp.TurnInputPart]) -> str: ...


@dataclass(eq=False)
class Ticket:
    """One admitted correction: the turn it captured on arrival and its place in line."""

    target: SteerTarget
    turn_id: str
    ahead: int
    """Corrections in line before this one when it was admitted."""
    ready: anyio.Event = field(default_factory=anyio.Event)
    """Set when this correction may be sent, or when the line was closed."""
    closed: bool = False


class SteeringQueue:
    """One session's serial, bounded line of corrections (see the module contract).

    ``current`` returns the session's running turn now, or None once it is idle or closed.
    ``submit_budget`` bounds each send, so a correction waits at most one budget per
    correction ahead of it (plus one of slack) before it gives up unsent.
    """

    def __init__(
        self,
        current: Callable[[], SteerTarget | None],
        submit_budget: float,
        limit: int = MAX_WAITING,
    ) -> None:
        self._current = current
        self._budget = submit_budget
        self._limit = limit
        self._waiting: deque[Ticket] = deque()
        self._sending: Ticket | None = None

    @property
    def idle(self) -> bool:
        return self._sending is None and not self._waiting

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def admit(self, target: SteerTarget, turn_id: str) -> Ticket:
        """Take a place in line at once (no await), so arrival order is send order.

        Raises:
            RpcError: INVALID_REQUEST when ``MAX_WAITING`` corrections already wait.
        """
        ticket = Ticket(target, turn_id, len(self._waiting) + (self._sending is not None))
        if ticket.ahead == 0:
            self._sending = ticket
            ticket.ready.set()
        elif len(self._waiting) >= self._limit:
            raise RpcError(
                INVALID_REQUEST,
                f"{len(self._waiting)} corrections are already waiting for this turn; wait for "
                "their answers before steering again",
            )
        else:
            self._waiting.append(ticket)
        return ticket

    async def send(
        self, ticket: Ticket, parts: list[msp.TurnInputPart], commit: CommitPoint = nullcontext
    ) -> str:
        """Wait for ``ticket``'s turn, check its target again and send, inside ``commit``;
        return the turn id.

        Raises:
            RpcError: INVALID_REQUEST when the target stopped being the running turn or Muse
                refused the correction; INTERNAL_ERROR when earlier corrections held the line
                too long, or as ``SteerTarget.steer`` raises it.
        """
        try:
            with anyio.move_on_after(self._budget * (ticket.ahead + 1)):
                await ticket.ready.wait()
            if not ticket.ready.is_set():
                raise RpcError(
                    INTERNAL_ERROR,
                    "earlier corrections to this turn did not finish in time, so this one was "
                    "not sent; send it again",
                )
            if ticket.closed:
                raise RpcError(
                    INVALID_REQUEST,
                    "the session was closed before this correction's turn came, so it was not "
                    "sent; load the session again to continue",
                )
            self._check_still_running(ticket)
            async with commit():
                return await ticket.target.steer(parts)
        finally:
            self._leave(ticket)

    def _check_still_running(self, ticket: Ticket) -> None:
        target = ticket.target
        if (
            self._current() is not target
            or not target.steerable
            or target.turn_id != ticket.turn_id
        ):
            raise RpcError(
                INVALID_REQUEST,
                f"turn {ticket.turn_id} ended (or was cancelled or closed) before this "
                "correction's turn came, so it was not sent; steer the running turn, or send "
                "a new prompt",
                {"turnId": ticket.turn_id},
            )

    def close(self) -> None:
        """Fail every waiting correction now; the one being sent ends with the turn's host."""
        for ticket in self._waiting:
            ticket.closed = True
            ticket.ready.set()
        self._waiting.clear()

    def _leave(self, ticket: Ticket) -> None:
        if self._sending is not ticket:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
            return
        self._sending = self._waiting.popleft() if self._waiting else None
        if self._sending is not None:
            self._sending.ready.set()
