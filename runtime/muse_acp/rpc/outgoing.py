"""Outgoing requests: the slot each one's answer is delivered to (``Pending``), the handle of
one whose answer is collected later (``OutgoingRequest``, from ``Connection.start_request``) and
a connection's table of them (``OutgoingRequests``: ids, slots, answers).

Contract: ``OutgoingRequest.result`` waits for the raw result (raising the peer's ``RpcError``,
or ``ConnectionClosed`` when the connection ended first); a caller cancelled while waiting, or
one calling ``withdraw``, withdraws the request, and the peer is told unless it has already
answered. Either way the request is settled once in its table, which holds its slot until then.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from muse_acp.rpc.errors import ConnectionClosed, RpcError
from muse_acp.rpc.jsonvalue import JsonValue

__all__ = ["WITHDRAWN_REMEMBERED", "OutgoingRequest", "OutgoingRequests", "Pending"]

logger: Final = logging.getLogger("muse_acp.rpc")

WITHDRAWN_REMEMBERED: Final = 64
"""Withdrawn requests whose late answers are recognised as such (the most recent ones)."""


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


class OutgoingRequests:
    """A connection's requests to its peer, from their ids to their answers: at most ``limit``
    at once (``take_slot``), each ``open`` until settled; one given up before its answer came
    is remembered, so that answer is not taken as odd (``answer``)."""

    def __init__(self, limit: int, first_id: int, name: str) -> None:
        if limit < 1:
            raise ValueError("max_pending_outgoing must be at least 1")
        self._name = name
        self._slots = anyio.Semaphore(limit, fast_acquire=True)
        self.upcoming = first_id
        """The id the next ``open`` gives."""
        self._pending: dict[int, Pending] = {}
        self._withdrawn: deque[int] = deque(maxlen=WITHDRAWN_REMEMBERED)

    async def take_slot(self) -> None:
        """Wait until fewer than ``limit`` requests are open, and hold a slot for the next."""
        await self._slots.acquire()

    def take_slot_now(self) -> bool:
        """``take_slot`` without a wait; False, holding nothing, when every slot is taken."""
        try:
            self._slots.acquire_nowait()
        except anyio.WouldBlock:
            return False
        return True

    def release_slot(self) -> None:
        """Give back a slot taken for a request that was not sent."""
        self._slots.release()

    def open(self, method: str, *, keep_frame: bool = False) -> tuple[int, Pending]:
        """Give the request a slot was taken for its id (``upcoming``) and its answer's slot."""
        request_id, self.upcoming = self.upcoming, self.upcoming + 1
        pending = self._pending[request_id] = Pending(method, keep_frame=keep_frame)
        return request_id, pending

    def abandon(self, request_id: int) -> None:
        """Forget an opened request that was never sent (or not whole): nothing to withdraw."""
        self._pending.pop(request_id, None)
        self._slots.release()

    def settle(self, request_id: int, *, answered: bool) -> None:
        """Forget a request whose answer was collected or given up; free its slot."""
        self._pending.pop(request_id, None)
        self._slots.release()
        if not answered:
            self._withdrawn.append(request_id)

    def answer(self, message: dict[str, JsonValue], request_id: JsonValue, frame: bytes) -> None:
        """Deliver the response ``message`` (read as ``frame``) to the request it answers."""
        pending = self._pending.pop(request_id, None) if type(request_id) is int else None
        if pending is None:
            if type(request_id) is int and request_id in self._withdrawn:
                logger.debug("%s: late answer to withdrawn request %s", self._name, request_id)
                self._withdrawn.remove(request_id)
            elif request_id is None:
                logger.warning("%s: peer could not read a frame: %.300r", self._name, message)
            else:
                logger.warning("%s: response to unknown id %.100r ignored", self._name, request_id)
            return
        if message.get("jsonrpc") != "2.0" or ("result" in message and "error" in message):
            logger.warning("%s: malformed response to %s", self._name, pending.method)
            pending.error = RpcError.internal_error(f"malformed response to {pending.method}")
        elif "error" in message:
            pending.error = RpcError.from_object(message["error"])
        else:
            pending.result = message["result"]
            if pending.keep_frame:
                pending.frame = frame
        pending.done.set()

    def fail_all(self) -> None:
        """The connection ended: every open request fails with ``ConnectionClosed``."""
        pending = list(self._pending.values())
        self._pending.clear()
        for entry in pending:
            entry.error = ConnectionClosed()
            entry.done.set()
