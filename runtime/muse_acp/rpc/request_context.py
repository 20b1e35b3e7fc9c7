"""What a request handler sees and returns: ``RequestContext``, ``MessageHandler``, ``Result``.

Contract: a ``Connection`` (``muse_acp.rpc.dispatcher``) gives each incoming request a
``RequestContext``. A request that changes state declares it (its route does) and makes its
change inside ``RequestContext.commit``: a cancel before the commit withdraws it with nothing
changed (REQUEST_CANCELLED), one after is ignored (``peer_cancelled``, which the connection
calls, owns where the request stands between the two). A handler
may queue work to run after its response (``after_response``) or take over the peer's cancel
(``on_cancel``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Final, Protocol, TypeAlias

import anyio

from muse_acp.rpc.errors import RpcError
from muse_acp.rpc.jsonvalue import JsonValue, RequestId
from muse_acp.rpc.transport import Payload

__all__ = ["EarlyStart", "MessageHandler", "RequestContext", "Result"]

logger: Final = logging.getLogger("muse_acp.rpc")

Result: TypeAlias = Payload
"""What a request handler returns: a pydantic model, ``RawJson`` or a JSON value."""


EarlyStart: TypeAlias = Callable[[str, JsonValue, "RequestContext"], None]
"""Work on a request done in the read loop as its frame is read, before its task starts
(``Connection(early_start=...)``), with its method, its params (unchecked) and its context: it
must never wait. A failure of it is logged, and the request goes on as without it."""


class _Commitment:
    """Where a request stands between the peer's cancel and its commit (``RequestContext``)."""

    __slots__ = ("committed", "declared", "withdrawn")

    def __init__(self) -> None:
        self.declared = False
        self.withdrawn = False
        self.committed = False


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a request handler knows about the request it is serving."""

    request_id: RequestId
    method: str
    arrival: int = 0
    """The position of the request's frame among every frame this connection read (from 1),
    so a handler can order its request against notifications that arrived around it."""
    followups: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """Work to run after a successful response was written, in order, in the same task.

    Lets a handler send notifications that must reach the peer after the response (for example
    updates about a session the response just created)."""
    cancel_handlers: list[Callable[[], None]] = field(default_factory=list)
    _commitment: _Commitment = field(default_factory=_Commitment, repr=False, compare=False)

    def declare_changes_state(self) -> None:
        """Say the request changes state, so it may ``commit`` (its route does this)."""
        self._commitment.declared = True

    @asynccontextmanager
    async def commit(self) -> AsyncIterator[None]:
        """The block where the request makes its change; the change is made whole or not at all.

        Entered only while the peer has not withdrawn the request; from then on the peer's
        cancel is ignored, and the block runs shielded from every cancellation (the connection's
        own end included), so it must be bounded. Everything a handler changes belongs in it;
        what comes before it may be stopped at any await. Entering it again is harmless.

        Raises:
            RpcError: REQUEST_CANCELLED when the peer withdrew the request first (nothing of
                the block runs).
            RuntimeError: the request's route does not declare that it changes state.
        """
        state = self._commitment
        if not state.declared:
            raise RuntimeError(f"{self.method} commits, but its route does not say it changes")
        if state.withdrawn:
            raise RpcError.request_cancelled()
        state.committed = True
        with anyio.CancelScope(shield=True):
            yield

    def after_response(self, work: Callable[[], Awaitable[None]]) -> None:
        self.followups.append(work)

    def on_cancel(self, handler: Callable[[], None]) -> None:
        """Take over the peer's cancellation of this request.

        Once a handler is registered, the peer's cancel notification calls it (synchronously,
        in arrival order; never once the request has committed) instead of cancelling the
        handler's task, so the handler can wind its work down in order and then answer:
        REQUEST_CANCELLED by raising ``RpcError.request_cancelled()``, or a result when the work
        had already finished."""
        self.cancel_handlers.append(handler)

    def peer_cancelled(self, scope: anyio.CancelScope, connection: str) -> None:
        """The peer's cancel of this request, whose task runs in ``scope`` (the connection
        calls it): ignored once committed; otherwise the request is withdrawn and its cancel
        handlers run, or, with none, its task is cancelled."""
        state = self._commitment
        if state.committed:
            # Too late: the change is being made, and is answered as made.
            logger.debug("%s: cancel of committed %s ignored", connection, self.method)
            return
        state.withdrawn = True
        if not self.cancel_handlers:
            scope.cancel()
            return
        for handler in self.cancel_handlers:
            try:
                handler()
            except Exception:
                logger.exception("%s: cancel handler of %s failed", connection, self.method)


class MessageHandler(Protocol):
    """Receives a connection's incoming requests and notifications."""

    async def handle_request(
        self, method: str, params: JsonValue | None, ctx: RequestContext
    ) -> Result: ...

    async def handle_notification(self, method: str, params: JsonValue | None) -> None: ...
