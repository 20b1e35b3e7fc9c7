"""Outgoing requests: the slot each one's answer is delivered to (``Pending``) and the handle
of one whose answer is collected later (``OutgoingRequest``, from ``Connection.start_request``).

Contract: ``OutgoingRequest.result`` waits for the raw result (raising the peer's ``RpcError``,
or ``ConnectionClosed`` when the connection ended first); a caller cancelled while waiting, or
one calling ``withdraw``, withdraws the request, and the peer is told unless it has already
answered. Either way the request is settled once in its connection, which counts it among its
pending requests until then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from muse_acp.rpc.errors import ConnectionClosed, RpcError
from muse_acp.rpc.jsonvalue import JsonValue

__all__ = ["OutgoingRequest", "Pending"]


class Pending:
    """The slot an outgoing request's response is delivered to."""

    __slots__ = ("done", "error", "frame", "keep_frame", "method", "result")

    def __init__(self, method: str, *, keep_frame: bool = False) -> None:
        self.method = method
        self.keep_frame = keep_frame
        self.done = anyio.Event()
        self.result: JsonValue = None
        self.frame: bytes | None = None
        self.error: RpcError | ConnectionClosed | None = None


class OutgoingRequest:
    """A request that was sent and whose answer is still to be collected (``start_request``)."""

    __slots__ = ("_pending", "_request_id", "_settle_in", "_settled", "_withdraw_in")

    def __init__(
        self,
        request_id: int,
        pending: Pending,
        withdraw: Callable[[int], Awaitable[None]],
        settle: Callable[..., None],
    ) -> None:
        self._request_id = request_id
        self._withdraw_in = withdraw
        """Tells the peer the request is withdrawn (the connection's ``cancel_method``)."""
        self._settle_in = settle
        """Forgets the request in the connection, saying whether it was answered."""
        self._pending = pending
        self._settled = False

    async def result(self) -> JsonValue:
        """Wait for the raw ``result``; a caller cancelled meanwhile withdraws the request.

        Raises:
            RpcError: the peer answered with an error.
            ConnectionClosed: the connection ended before the response arrived.
        """
        pending = self._pending
        try:
            await pending.done.wait()
        except anyio.get_cancelled_exc_class():
            await self.withdraw()
            raise
        finally:
            self._settle()
        if pending.error is not None:
            raise pending.error
        return pending.result

    @property
    def frame(self) -> bytes | None:
        """The frame that answered the request with its result, when it was started with
        ``keep_frame``; None before the result, and for a request started without it."""
        return self._pending.frame

    async def withdraw(self) -> None:
        """Give up on the answer; the peer is told when it has not answered yet (through the
        connection's ``cancel_method``). Harmless once the answer was collected."""
        if self._settled:
            return
        try:
            if not self._pending.done.is_set():
                await self._withdraw_in(self._request_id)
        finally:
            self._settle()

    def _settle(self) -> None:
        if not self._settled:
            self._settled = True
            self._settle_in(self._request_id, answered=self._pending.done.is_set())
