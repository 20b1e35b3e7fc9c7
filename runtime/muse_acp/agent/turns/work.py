"""What occupies a session, and the one way to stop it.

Contract: a session runs one ``SessionWork`` at a time: a prompt (a model turn or a local
command), a settings change that talks to Muse, or a turn Muse kept waiting on the user.
``cancel()`` is the only way anything stops work, whoever asks (``session/cancel``,
``$/cancel_request``, ``session/close``, ``/logout``): it reaches the part that runs now, and a
part that starts later sees ``cancel_requested`` and does not start. A running turn is stopped
through its own ``request_cancel`` (so Muse hears of it and the turn settles in order); anything
else runs ``interruptibly`` and is cancelled at once. ``finished`` is set when the work ended,
however it ended; a prompt briefly waits for work that is ``ending``. What the work changes it
changes inside ``commit`` (the request's commit when a request runs it, see
``RequestContext.commit``): refused when that request was withdrawn first, never stopped half-way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Protocol

import anyio

__all__ = ["CancellableTurn", "CommitPoint", "SessionWork"]

CommitPoint = Callable[[], AbstractAsyncContextManager[None]]
"""Opens the block where work makes its change (``RequestContext.commit`` is one)."""


@asynccontextmanager
async def _shielded() -> AsyncIterator[None]:
    """The commit of work no request can withdraw: only shielded."""
    with anyio.CancelScope(shield=True):
        yield


class CancellableTurn(Protocol):
    """What cancelling needs of a running turn (``turn.ActiveTurn`` is one)."""

    def request_cancel(self) -> None: ...


class SessionWork:
    """One piece of work on a session (see the module contract)."""

    def __init__(self, activity: str, arrival: int = 0) -> None:
        self.activity = activity
        """What the work is, for messages ("a prompt", "a configuration change")."""
        self.arrival = arrival
        """The position of the frame that asked for the work on its connection."""
        self.cancel_requested = False
        self.finished = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._turn: CancellableTurn | None = None
        self.commit: CommitPoint = _shielded
        """Where the work makes its change; the request that runs it sets its own."""
        self.ending: Callable[[], bool] = lambda: False
        """True while the work is about to end on its own (a prompt then waits for it)."""
        self.ending_within: float | None = None
        """Seconds a prompt waits for such work to end (None: the cancel budget)."""
        self.queues_prompts = False
        """A prompt that arrives meanwhile waits in the session's line, as behind a prompt."""

    def cancel(self) -> None:
        """Stop the work (idempotent); returns at once, the work ends soon after."""
        if self.cancel_requested or self.finished.is_set():
            return
        self.cancel_requested = True
        if self._turn is not None:
            self._turn.request_cancel()
        if self._scope is not None:
            self._scope.cancel()

    @contextmanager
    def interruptibly(self) -> Iterator[anyio.CancelScope]:
        """Run a block that ``cancel`` stops at once (check ``cancel_requested`` after it)."""
        with anyio.CancelScope() as scope:
            if self.cancel_requested:
                scope.cancel()
            self._scope = scope
            try:
                yield scope
            finally:
                self._scope = None

    @contextmanager
    def running(self, turn: CancellableTurn) -> Iterator[None]:
        """Route cancellation to ``turn`` while the block runs it."""
        self._turn = turn
        if self.cancel_requested:
            turn.request_cancel()
        try:
            yield
        finally:
            self._turn = None

    def finish(self) -> None:
        self.finished.set()
