"""The silence watch of a running turn: a host that stops talking fails the turn, in bounds.

Contract: a ``SilenceWatch`` is told of every event the host sends for its session (``heard``);
``watch`` runs from the host's acknowledgement of the turn until its caller cancels it, and
calls ``on_silence`` once, then returns, when ``budget`` seconds pass without an event while
nobody waits on the client. Every event restarts the count, so a turn that reports progress runs
as long as it needs. Time spent waiting on the client is never the host's: a permission dialog
or question (``waiting_on_client``) and a write to the client (``client_write``) restart the
count when they end. A write that waits a whole budget is logged once as a client that stopped
reading; the turn goes on waiting, never failed as Muse's silence.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

__all__ = ["SilenceWatch"]

logger: Final = logging.getLogger("muse_acp.agent")


def _event_loop_clock() -> Callable[[], float]:
    """The clock ``anyio.current_time`` reads, without looking up the backend at every call.

    On asyncio that is the running loop's own ``time`` (what anyio's asyncio backend returns
    itself, for less); any other backend keeps ``anyio.current_time``.
    """
    try:
        return asyncio.get_running_loop().time
    except RuntimeError:
        return anyio.current_time


class SilenceWatch:
    """Notices a host that went silent during a turn (see the module contract)."""

    def __init__(
        self, budget: float, waiting_on_client: Callable[[], bool], session_id: str = ""
    ) -> None:
        self.budget = budget
        self._waiting_on_client = waiting_on_client
        self._session_id = session_id
        self._now = _event_loop_clock()
        self._last = self._now()
        self._writes = 0
        """The turn's writes to the client under way."""
        self._writing_since = 0.0
        """When the writes under way began (the first of an unbroken run of them)."""
        self._stall_reported = False
        self._stopped = anyio.Event()

    def stop(self) -> None:
        """End ``watch`` (its turn has settled): it returns, not cancelled (idempotent)."""
        self._stopped.set()

    def heard(self) -> None:
        """The host sent something for this session (cheap: called for every event)."""
        self._last = self._now()

    async def client_write(self, write: Awaitable[None]) -> None:
        """Await ``write``, one of the turn's writes to the client (see the module contract)."""
        if not self._writes:
            self._writing_since = self._now()
        self._writes += 1
        try:
            await write
        finally:
            self._writes -= 1
            if not self._writes:
                self._last = self._now()
                if self._stall_reported:
                    self._stall_reported = False
                    waited = self._last - self._writing_since
                    logger.warning(
                        "session %s: the client reads again, after %.1f s", self._session_id, waited
                    )

    def _stalled(self, now: float) -> bool:
        """Whether a write to the client is under way; one that has waited a budget or more
        is reported once, as a client that stopped reading."""
        if not self._writes:
            return False
        waited = now - self._writing_since
        if waited >= self.budget and not self._stall_reported:
            self._stall_reported = True
            logger.warning(
                "session %s: the client has not read muse-acp's output for %.1f s: it seems to "
                "have stopped reading. The turn (and Muse's output) waits until it reads again.",
                self._session_id,
                waited,
            )
        return True

    async def watch(self, on_silence: Callable[[], None]) -> None:
        """Call ``on_silence`` after ``budget`` seconds without a word (see the contract)."""
        self._last = self._now()
        waited = False
        stopped = self._stopped
        while not stopped.is_set():
            # Woken once per budget at most, not per event: the relay's hot path stays a
            # clock read.
            with anyio.CancelScope(deadline=self._last + self.budget):
                await stopped.wait()
            if stopped.is_set():
                return
            now = self._now()
            if now < self._last + self.budget:
                continue  # heard from the host meanwhile
            stalled = self._stalled(now)
            asking = self._waiting_on_client()
            if stalled or asking:
                # A write restarts the count itself when it ends; only a dialog's end is not
                # known here, so only a dialog makes the next look restart it.
                self._last, waited = now, asking
                continue
            if waited:
                # The wait ended since the last look, at a moment not known here: the host's
                # count starts now, so an answer given just before this look is not held
                # against the host.
                self._last, waited = now, False
                continue
            on_silence()
            return
