"""A protocol-agnostic JSON-RPC 2.0 connection over a frame reader and writer.

Contract: ``Connection.serve`` reads frames until end of input and answers every incoming
request exactly once: with the handler's result, its error (``error_from_exception``),
REQUEST_CANCELLED when the peer cancelled it through ``cancel_method``, or INVALID_REQUEST /
PARSE_ERROR for an unusable frame. Batches are refused. A request that changes state makes its
change inside ``RequestContext.commit``: a cancel before the commit withdraws it with nothing
changed, one after is ignored. Requests run in tasks of their own; notifications and responses
are handled inline in arrival order (so their handlers must return quickly), and a ``lane``
(``FrameLane``) may take frames at that same place.

Outgoing: ``request``, ``notify``, ``send_notification_nowait`` and ``start_request`` (an
``OutgoingRequest`` collected or withdrawn later), at most ``max_pending_outgoing`` at once. When
input ends or ``aclose`` is called, outstanding requests fail with ``ConnectionClosed``, handlers
are cancelled and ``closed`` is set.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Final

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.lowlevel import checkpoint

from muse_acp.rpc.decoding import RefusedFrame, decode_frame
from muse_acp.rpc.errors import ConnectionClosed, RpcError, error_from_exception
from muse_acp.rpc.jsonvalue import JsonValue, RequestId
from muse_acp.rpc.outgoing import OutgoingRequest, Pending
from muse_acp.rpc.request_context import MessageHandler, RequestContext
from muse_acp.rpc.transport import (
    FrameLane,
    FrameObserver,
    FrameReader,
    FrameWriter,
    OversizedFrame,
    Payload,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
)

__all__ = ["DEFAULT_CANCEL_METHOD", "Connection"]

logger: Final = logging.getLogger("muse_acp.rpc")

DEFAULT_CANCEL_METHOD: Final = "$/cancel_request"
"""The notification ACP uses to withdraw a request: ``{"requestId": <id>}``."""

CANCEL_NOTICE_TIMEOUT: Final = 5.0
"""Seconds a withdrawn request may spend telling the peer before giving up."""

WITHDRAWN_REMEMBERED: Final = 64
"""Withdrawn requests whose late answers are recognised as such (the most recent ones)."""

CLOSE_TIMEOUT: Final = 5.0
"""Seconds ``aclose`` may spend closing the writer."""

_WRITE_ERRORS: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
_READ_ERRORS: Final = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class Connection:
    """One JSON-RPC 2.0 peer connection (see the module contract)."""

    def __init__(
        self,
        reader: FrameReader,
        writer: FrameWriter,
        handler: MessageHandler,
        *,
        name: str,
        cancel_method: str | None = DEFAULT_CANCEL_METHOD,
        max_pending_outgoing: int = 1024,
        first_request_id: int = 1,
        on_frame: FrameObserver | None = None,
        lane: FrameLane | None = None,
    ) -> None:
        if max_pending_outgoing < 1:
            raise ValueError("max_pending_outgoing must be at least 1")
        self.name = name
        self._reader = reader
        self._writer = writer
        self._handler = handler
        self._cancel_method = cancel_method
        self._on_frame = on_frame
        self._lane = lane
        self._next_id = first_request_id
        self._outgoing: dict[int, Pending] = {}
        self._incoming: dict[RequestId, tuple[anyio.CancelScope, RequestContext]] = {}
        self._arrivals = 0
        self._slots = anyio.Semaphore(max_pending_outgoing, fast_acquire=True)
        self._withdrawn: deque[int] = deque(maxlen=WITHDRAWN_REMEMBERED)
        """Requests given up before their answer came: a late answer is expected, not odd."""
        self._task_group: TaskGroup | None = None
        self._closing = False
        self._closed = anyio.Event()

    @property
    def arrivals(self) -> int:
        """How many frames have been read so far; while a notification is being handled,
        the position of that notification's frame."""
        return self._arrivals

    @property
    def closed(self) -> anyio.Event:
        """Set once the connection has stopped (input ended or ``aclose`` was called)."""
        return self._closed

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Read and handle frames until end of input or ``aclose``; call once."""
        if self._task_group is not None:
            raise RuntimeError(f"connection {self.name} is already being served")
        try:
            async with anyio.create_task_group() as task_group:
                self._task_group = task_group
                task_status.started()
                if not self._closing:
                    await self._read_loop()
                self._shutdown()
                task_group.cancel_scope.cancel()
        finally:
            self._shutdown()

    async def aclose(self) -> None:
        """Stop serving, fail outstanding requests and close the writer; idempotent."""
        self._shutdown()
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()
        with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
            try:
                await self._writer.aclose()
            except _WRITE_ERRORS:
                logger.debug("%s: writer was already unusable at close", self.name)

    async def request(self, method: str, params: Payload = None) -> JsonValue:
        """Send a request and return its raw ``result``.

        Waits while ``max_pending_outgoing`` requests are outstanding.

        Raises:
            RpcError: the peer answered with an error.
            ConnectionClosed: the connection ended before the response arrived.
        """
        outgoing = await self.start_request(method, params)
        return await outgoing.result()

    async def start_request(
        self, method: str, params: Payload = None, *, keep_frame: bool = False
    ) -> OutgoingRequest:
        """Send a request; its answer is collected with ``result`` on what is returned, and
        with ``keep_frame`` the frame that carried it too (``OutgoingRequest.frame``).

        Waits while ``max_pending_outgoing`` requests are outstanding.

        Raises:
            ConnectionClosed: the connection has ended or the peer stopped reading.
        """
        if self._closing:
            raise ConnectionClosed()
        await self._slots.acquire()
        request_id = self._next_id
        try:
            if self._closing:
                raise ConnectionClosed()
            self._next_id += 1
            frame = encode_request(request_id, method, params)
            pending = Pending(method, keep_frame=keep_frame)
            self._outgoing[request_id] = pending
            try:
                await self._send(frame)
            except _WRITE_ERRORS as exc:
                raise ConnectionClosed() from exc
        except BaseException:
            # Never sent (or not whole): nothing to withdraw from the peer.
            self._outgoing.pop(request_id, None)
            self._slots.release()
            raise
        return OutgoingRequest(request_id, pending, self._withdraw, self._settle)

    def _settle(self, request_id: int, *, answered: bool) -> None:
        """Forget an outgoing request whose answer was collected or given up; free its slot.
        One given up before its answer came is remembered, so that answer is not taken as odd."""
        self._outgoing.pop(request_id, None)
        self._slots.release()
        if not answered:
            self._withdrawn.append(request_id)

    def send_notification_nowait(self, frame: bytes, *, now: bool = False) -> bool:
        """Queue ``frame``, one notification encoded whole (as ``encode_notification`` writes it,
        or a template cut from that), if the writer takes it without waiting
        (``FrameWriter.send_nowait``; ``now``: written at once if it can be); False, with
        nothing sent, when it cannot or the connection is closing: ``notify`` then sends it, or
        raises why it cannot."""
        if self._closing:
            return False
        if not self._writer.send_nowait(frame, now=now):
            return False
        if self._on_frame is not None:
            self._on_frame("out", frame)
        return True

    async def notify(self, method: str, params: Payload = None) -> None:
        """Send a notification.

        Raises:
            ConnectionClosed: the connection has ended or the peer stopped reading.
        """
        if self._closing:
            raise ConnectionClosed()
        try:
            await self._send(encode_notification(method, params))
        except _WRITE_ERRORS as exc:
            raise ConnectionClosed() from exc

    async def _withdraw(self, request_id: int) -> None:
        if self._cancel_method is None or self._closing:
            return
        notice = encode_notification(self._cancel_method, {"requestId": request_id})
        with anyio.move_on_after(CANCEL_NOTICE_TIMEOUT, shield=True):
            await self._send_quietly(notice)

    def _shutdown(self) -> None:
        self._closing = True
        pending = list(self._outgoing.values())
        self._outgoing.clear()
        for entry in pending:
            entry.error = ConnectionClosed()
            entry.done.set()
        self._closed.set()

    async def _send(self, frame: bytes) -> None:
        if self._on_frame is not None:
            self._on_frame("out", frame)
        await self._writer.send(frame)

    async def _send_quietly(self, frame: bytes) -> None:
        try:
            await self._send(frame)
        except _WRITE_ERRORS:
            logger.debug("%s: dropped a frame, the peer is gone", self.name)

    async def _reply_error(self, request_id: RequestId | None, error: RpcError) -> None:
        await self._send_quietly(encode_error(request_id, error))

    async def _read_loop(self) -> None:
        reader = self._reader
        while True:
            try:
                frame = await reader.__anext__()
            except StopAsyncIteration:
                return
            except _READ_ERRORS as exc:
                logger.warning("%s: input failed, closing: %r", self.name, exc)
                return
            self._arrivals += 1
            if isinstance(frame, OversizedFrame):
                limit = reader.max_frame_bytes
                message = f"frame of {frame.size_seen} bytes exceeds the {limit}-byte limit"
                await self._reply_error(None, RpcError.invalid_request(message))
                continue
            if self._on_frame is not None:
                self._on_frame("in", frame)
            if self._lane is not None:
                taken = self._lane(frame)
                if taken is True:
                    continue
                if taken is not False:
                    try:
                        await taken
                    except Exception:
                        logger.exception("%s: handler of a notification failed", self.name)
                    continue
            decoded = decode_frame(frame)
            if isinstance(decoded, RefusedFrame):
                if decoded.answer:
                    await self._reply_error(decoded.request_id, decoded.error)
                else:
                    logger.warning("%s: dropped a frame: %s", self.name, decoded.error.message)
                continue
            await self._dispatch(decoded, frame)

    async def _dispatch(self, message: JsonValue, frame: bytes) -> None:
        if type(message) is not dict:
            await self._reply_error(None, RpcError.invalid_request("expected one message object"))
            return
        request_id = message.get("id")
        is_response = "result" in message or "error" in message
        if is_response and "method" not in message and "id" in message:
            self._handle_response(message, request_id, frame)
            return
        reply_id = request_id if type(request_id) is int or type(request_id) is str else None
        if message.get("jsonrpc") != "2.0":
            await self._reply_error(reply_id, RpcError.invalid_request('jsonrpc must be "2.0"'))
            return
        method = message.get("method")
        if type(method) is not str:
            await self._reply_error(reply_id, RpcError.invalid_request("method must be a string"))
            return
        params = message.get("params")
        if "id" not in message:
            await self._handle_notification(method, params)
        elif reply_id is None:
            error = RpcError.invalid_request("id must be a string or an integer")
            await self._reply_error(None, error)
        elif reply_id in self._incoming:
            error = RpcError.invalid_request("id is already used by a request in progress")
            await self._reply_error(reply_id, error)
        else:
            self._start_request(reply_id, method, params)
            # The request's task goes first: what it does before its first wait (a prompt's
            # way to Muse) is not kept behind this loop's next read and the wait for it.
            await checkpoint()

    def _handle_response(
        self, message: dict[str, JsonValue], request_id: JsonValue, frame: bytes
    ) -> None:
        pending = self._outgoing.pop(request_id, None) if type(request_id) is int else None
        if pending is None:
            if type(request_id) is int and request_id in self._withdrawn:
                logger.debug("%s: late answer to withdrawn request %s", self.name, request_id)
                self._withdrawn.remove(request_id)
            elif request_id is None:
                logger.warning("%s: peer could not read a frame: %.300r", self.name, message)
            else:
                logger.warning("%s: response to unknown id %.100r ignored", self.name, request_id)
            return
        if message.get("jsonrpc") != "2.0" or ("result" in message and "error" in message):
            logger.warning("%s: malformed response to %s", self.name, pending.method)
            pending.error = RpcError.internal_error(f"malformed response to {pending.method}")
        elif "error" in message:
            pending.error = RpcError.from_object(message["error"])
        else:
            pending.result = message["result"]
            if pending.keep_frame:
                pending.frame = frame
        pending.done.set()

    async def _handle_notification(self, method: str, params: JsonValue) -> None:
        if method == self._cancel_method:
            target = params.get("requestId") if isinstance(params, dict) else None
            if type(target) is int or type(target) is str:
                self._cancel_incoming(target)
            return
        try:
            await self._handler.handle_notification(method, params)
        except Exception:
            logger.exception("%s: handler for notification %s failed", self.name, method)

    def _cancel_incoming(self, request_id: RequestId) -> None:
        entry = self._incoming.get(request_id)
        if entry is not None:
            scope, context = entry
            context.peer_cancelled(scope, self.name)

    def _start_request(self, request_id: RequestId, method: str, params: JsonValue) -> None:
        assert self._task_group is not None  # only called from serve's read loop
        scope = anyio.CancelScope()
        context = RequestContext(request_id, method, self._arrivals)
        self._incoming[request_id] = (scope, context)
        self._task_group.start_soon(self._run_request, context, params, scope)

    async def _run_request(
        self, context: RequestContext, params: JsonValue, scope: anyio.CancelScope
    ) -> None:
        request_id, method = context.request_id, context.method
        try:
            frame, succeeded = await self._answer(context, params, scope)
        finally:
            del self._incoming[request_id]
        await self._send_quietly(frame)
        if succeeded:
            for work in context.followups:
                try:
                    await work()
                except ConnectionClosed:
                    # The peer went away after its answer: nothing is left to tell it.
                    logger.debug("%s: follow-up of %s dropped: the peer is gone", self.name, method)
                    return
                except Exception:
                    logger.exception("%s: follow-up of %s failed", self.name, method)

    async def _answer(
        self, context: RequestContext, params: JsonValue, scope: anyio.CancelScope
    ) -> tuple[bytes, bool]:
        request_id, method = context.request_id, context.method
        try:
            with scope:
                result = await self._handler.handle_request(method, params, context)
                return encode_result(request_id, result), True
            # Only reached when the scope absorbed the peer's own cancellation.
            error = RpcError.request_cancelled()
        except Exception as exc:
            error = error_from_exception(exc, method=method)
        return encode_error(request_id, error), False
