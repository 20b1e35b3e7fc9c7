"""The JSON-RPC 2.0 runtime muse-acp runs on: framing, dispatch, typed routing.

It knows nothing about ACP or MSP: methods are strings and params are JSON values until a
``Router`` validates them into the pydantic models its routes name. Layers, bottom up:
``transport`` (NDJSON frames over anyio byte streams), ``stdio`` and ``memory`` (byte streams to
run on, and ``coalescing`` to write bursts of frames as one), ``dispatcher`` (``Connection``:
requests, notifications, responses, cancellation), ``router`` (typed routes and typed calls,
``splice`` finding a result's member as the peer wrote it), with ``errors`` shared by all of
them. ``memory`` is imported from its own module: what serves stdio does not load it.
"""

from muse_acp.rpc.coalescing import CoalescingSendStream, coalescing
from muse_acp.rpc.decoding import decode_plainly
from muse_acp.rpc.dispatcher import DEFAULT_CANCEL_METHOD, Connection
from muse_acp.rpc.errors import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
    ConnectionClosed,
    RpcError,
    error_from_exception,
)
from muse_acp.rpc.jsonvalue import JsonInput, JsonObject, JsonValue, RequestId
from muse_acp.rpc.outgoing import OutgoingRequest
from muse_acp.rpc.request_context import EarlyStart, MessageHandler, RequestContext, Result
from muse_acp.rpc.router import (
    NotificationRoute,
    RequestRoute,
    Router,
    call,
    call_forwarding,
    typed_result,
    validate_params,
)
from muse_acp.rpc.stdio import open_stdio
from muse_acp.rpc.transport import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameLane,
    FrameObserver,
    FrameReader,
    FrameWriter,
    OversizedFrame,
    Payload,
    RawJson,
    encode_error,
    encode_message,
    encode_notification,
    encode_request,
    encode_result,
    encode_value,
)
from muse_acp.rpc.validation import describe_validation_error

__all__ = [
    "AUTH_REQUIRED",
    "DEFAULT_CANCEL_METHOD",
    "DEFAULT_MAX_FRAME_BYTES",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "RESOURCE_NOT_FOUND",
    "CoalescingSendStream",
    "Connection",
    "ConnectionClosed",
    "EarlyStart",
    "FrameLane",
    "FrameObserver",
    "FrameReader",
    "FrameWriter",
    "JsonInput",
    "JsonObject",
    "JsonValue",
    "MessageHandler",
    "NotificationRoute",
    "OutgoingRequest",
    "OversizedFrame",
    "Payload",
    "RawJson",
    "RequestContext",
    "RequestId",
    "RequestRoute",
    "Result",
    "Router",
    "RpcError",
    "call",
    "call_forwarding",
    "coalescing",
    "decode_plainly",
    "describe_validation_error",
    "encode_error",
    "encode_message",
    "encode_notification",
    "encode_request",
    "encode_result",
    "encode_value",
    "error_from_exception",
    "open_stdio",
    "typed_result",
    "validate_params",
]
