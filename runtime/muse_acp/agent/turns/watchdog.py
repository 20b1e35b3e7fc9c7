"""The silence watch of a running turn: a host that stops talking fails the turn, in bounds.

Contract: a ``SilenceWatch`` is told of every event the host sends for its session
(``heard``); ``watch`` runs from the host's acknowledgement of the turn until the turn settles
(its caller cancels it), and calls ``on_silence`` once, then returns, when ``budget`` seconds
pass without a single event while nobody is waiting on the client. Time the client takes over
a permission dialog or a question (``waiting_on_client``) is the user's, never the host's: a
window in which the turn waits on the client starts the count again, and once the wait is over
the host has a whole budget from the first look that finds it over (never less than a budget
after the answer went back, however late in a window the client answered). Every event
restarts the count, so a long turn that reports progress runs as long as it needs.

The turn's own writes to the client go through ``client_write``. While one waits (a client that
stops reading fills the pipe, and the turn, reading the host inline, stops reading the host's
events too), the host's silence is not counted, just as while the client is asked something:
the end of each write restarts the count. A write that has waited a whole budget or more is
logged once as a client that stopped reading (and its end, when it comes); the turn goes on
waiting for the client, never failed as Muse's silence.
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
    itself, at a tenth of the cost); any other backend keeps ``anyio.current_time``.
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
        while True:
            # Woken once per budget at most, not per event: the relay's hot path stays a
            # clock read.
            await anyio.sleep_until(self._last + self.budget)
            now = self._now()
            if now < self._last + self.budget:
                continue  # heard from the host meanwhile
            if self._stalled(now) or self._waiting_on_client():
                self._last, waited = now, True
                continue
            if waited:
                # The wait ended since the last look, at a moment not known here: the host's
                # count starts now, so an answer given just before this look is not held
                # against the host.
                self._last, waited = now, False
                continue
            on_silence()
            return
