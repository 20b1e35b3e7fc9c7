"""A protocol-agnostic JSON-RPC 2.0 connection over a frame reader and writer.

Contract: ``Connection.serve`` reads frames until end of input and answers every incoming
request exactly once: with the handler's result, its error (``error_from_exception``),
REQUEST_CANCELLED when the peer cancelled it through ``cancel_method``, or INVALID_REQUEST /
PARSE_ERROR for an unusable frame. Batches are refused. A request that changes state makes its
change inside ``RequestContext.commit``: a cancel before the commit withdraws it with nothing
changed, one after is ignored. Requests run in tasks of their own; notifications and responses
are handled inline in arrival order (so their handlers must return quickly), where a ``lane``
may take frames and an ``early_start`` begin a request's work before its task starts.

Outgoing: ``request``, ``notify``, ``send_notification_nowait`` and ``start_request`` (at once,
``start_request_at_once``), at most ``max_pending_outgoing`` at once (``outgoing``). When input
ends or ``aclose`` is called, they fail with ``ConnectionClosed``, handlers are cancelled and
``closed`` is set.
"""

from __future__ import annotations

import logging
from typing import Final

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.lowlevel import checkpoint

from muse_acp.rpc.decoding import RefusedFrame, decode_frame
from muse_acp.rpc.errors import ConnectionClosed, RpcError, error_from_exception
from muse_acp.rpc.jsonvalue import JsonValue, RequestId
from muse_acp.rpc.outgoing import OutgoingRequest, OutgoingRequests
from muse_acp.rpc.request_context import EarlyStart, MessageHandler, RequestContext
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
        early_start: EarlyStart | None = None,
    ) -> None:
        self.name = name
        self._reader = reader
        self._writer = writer
        self._handler = handler
        self._cancel_method = cancel_method
        self._on_frame = on_frame
        self._lane = lane
        self._early_start = early_start
        self._outgoing = OutgoingRequests(max_pending_outgoing, first_request_id, name)
        self._incoming: dict[RequestId, tuple[anyio.CancelScope, RequestContext]] = {}
        self._arrivals = 0
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
        outgoing = self._outgoing
        if self._closing:
            raise ConnectionClosed()
        await outgoing.take_slot()
        if self._closing:
            outgoing.release_slot()
            raise ConnectionClosed()
        request_id, pending = outgoing.open(method, keep_frame=keep_frame)
        try:
            await self._send(encode_request(request_id, method, params))
        except BaseException as exc:
            outgoing.abandon(request_id)  # never sent (or not whole): nothing to withdraw
            if isinstance(exc, _WRITE_ERRORS):
                raise ConnectionClosed() from exc
            raise
        return OutgoingRequest(request_id, pending, self._withdraw, outgoing.settle)

    def start_request_at_once(
        self, method: str, params: Payload = None, *, hand_over: bool = False
    ) -> OutgoingRequest | None:
        """``start_request`` when it needs no wait: a request slot is free and the writer writes
        the frame at once (``FrameWriter.send_at_once``, ``hand_over`` as there); None, with
        nothing sent, otherwise."""
        outgoing = self._outgoing
        if self._closing or not outgoing.take_slot_now():
            return None
        try:
            frame = encode_request(outgoing.upcoming, method, params)
            written = self._writer.send_at_once(frame, hand_over=hand_over)
        except BaseException as exc:
            outgoing.release_slot()
            if isinstance(exc, _WRITE_ERRORS):
                return None  # the stream is broken: ``start_request`` says so
            raise
        if not written:
            outgoing.release_slot()
            return None
        request_id, pending = outgoing.open(method)
        if self._on_frame is not None:
            self._on_frame("out", frame)
        return OutgoingRequest(request_id, pending, self._withdraw, outgoing.settle)

    def send_notification_nowait(
        self, frame: bytes, *, now: bool = False, hand_over: bool = False
    ) -> bool:
        """Queue ``frame``, one notification encoded whole (as ``encode_notification`` writes it,
        or a template cut from that), if the writer takes it without waiting
        (``FrameWriter.send_nowait``; ``now``: written at once if it can be; ``hand_over``: and
        the reader goes first); False, with nothing sent, when it cannot or the connection is
        closing: ``notify`` then sends it, or raises why it cannot."""
        if self._closing:
            return False
        if not self._writer.send_nowait(frame, now=now, hand_over=hand_over):
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
        self._outgoing.fail_all()
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
            self._outgoing.answer(message, request_id, frame)
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
        context = RequestContext(request_id, method, self._arrivals)
        if self._early_start is not None:  # first: nothing it does waits on what follows
            try:
                self._early_start(method, params, context)
            except Exception:  # its request goes on as it would have without it
                logger.exception("%s: the early start of %s failed", self.name, method)
        scope = anyio.CancelScope()
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
