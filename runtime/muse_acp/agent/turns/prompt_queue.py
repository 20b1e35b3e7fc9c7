"""The line of prompts waiting for one session, in arrival order.

Contract: a prompt that arrives while another prompt occupies its session (running, or being
cancelled) takes a place in the session's one FIFO ``PromptQueue``, at most ``MAX_QUEUED`` of
them (-32600 beyond, saying so), and ``wait``s there. When the work that occupies the session
ends, the session hands itself to the first prompt still waiting (``call_next``) before anything
else can claim it, so prompts run one after another in the order they arrived, each answered
with its own stop reason (a turn Muse started by itself waits first: it already runs there).
A waiting prompt that is cancelled (``session/cancel`` through ``cancel``, its own
``$/cancel_request``, the session's close) leaves the line and never runs:
nothing of it reached Muse, so ``cancelled`` is the whole truth. The line is the adapter's, the
same on every backend and Muse version: a prompt sends ``turn/start`` only once it has the
session, so Muse's own queue (``turn/start`` ``ifBusy``) is never used besides it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Final

import anyio

from muse_acp.agent.turns.work import SessionWork
from muse_acp.rpc import INVALID_REQUEST, RpcError

__all__ = ["MAX_QUEUED", "PromptQueue"]

MAX_QUEUED: Final = 16
"""Prompts that may wait per session behind the one that occupies it."""


@dataclass(eq=False)
class _Place:
    work: SessionWork
    called: anyio.Event = field(default_factory=anyio.Event)
    """Set when the session was handed to this prompt."""


class PromptQueue:
    """One session's bounded line of waiting prompts (see the module contract)."""

    def __init__(self, limit: int = MAX_QUEUED) -> None:
        self._limit = limit
        self._places: deque[_Place] = deque()

    def __len__(self) -> int:
        return len(self._places)

    def join(
        self, work: SessionWork, session_id: str, ahead_of_it: SessionWork, *, first: bool = False
    ) -> None:
        """Give ``work`` the last place in line (no await, so arrival order is run order), or
        the first (``first``: a turn Muse already runs, never refused).

        Raises:
            RpcError: INVALID_REQUEST when ``MAX_QUEUED`` prompts already wait, saying so.
        """
        if first:
            self._places.appendleft(_Place(work))
            return
        if len(self._places) >= self._limit:
            state = "being cancelled" if ahead_of_it.cancel_requested else "running"
            raise RpcError(
                INVALID_REQUEST,
                f"session {session_id} already has {len(self._places)} prompts waiting behind "
                f"{ahead_of_it.activity} ({state}), the most it queues; send this one once a "
                "waiting prompt is answered, or cancel them all with session/cancel",
                {"busy": ahead_of_it.activity, "state": state, "queued": len(self._places)},
            )
        self._places.append(_Place(work))

    async def wait(self, work: SessionWork) -> bool:
        """Wait until the session is handed to ``work`` (True) or ``work`` is cancelled while
        it waits (False: it has left the line)."""
        place = self._place(work)
        if place is None:
            return False
        with work.interruptibly():
            await place.called.wait()
        if place.called.is_set():
            return True
        self.leave(work)
        return False

    def call_next(self) -> SessionWork | None:
        """Hand the session to the first prompt still waiting; None when none waits."""
        while self._places:
            place = self._places.popleft()
            if not place.work.cancel_requested:
                place.called.set()
                return place.work
        return None

    def cancel(self, arrival: int = 0) -> None:
        """Cancel every waiting prompt that arrived before ``arrival`` (all of them for 0);
        each leaves the line at once and its ``wait`` returns False."""
        for place in list(self._places):
            if arrival == 0 or place.work.arrival < arrival:
                self._places.remove(place)
                place.work.cancel()

    def leave(self, work: SessionWork) -> None:
        """Take ``work`` out of the line, if it is in it."""
        place = self._place(work)
        if place is not None:
            self._places.remove(place)

    def _place(self, work: SessionWork) -> _Place | None:
        return next((place for place in self._places if place.work is work), None)
