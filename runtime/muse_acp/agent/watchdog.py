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
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anyio

__all__ = ["SilenceWatch"]


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

    def __init__(self, budget: float, waiting_on_client: Callable[[], bool]) -> None:
        self.budget = budget
        self._waiting_on_client = waiting_on_client
        self._now = _event_loop_clock()
        self._last = self._now()

    def heard(self) -> None:
        """The host sent something for this session (cheap: called for every event)."""
        self._last = self._now()

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
            if self._waiting_on_client():
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
