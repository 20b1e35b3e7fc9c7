"""JSON-RPC error codes, the one error type, and the one exception-to-error mapper.

Contract: every error that crosses the wire is an ``RpcError`` (``code``, ``message``, optional
``data``). Handlers raise ``RpcError`` (usually through its constructors) to answer with a
specific error; ``error_from_exception`` maps anything else a handler raises. A peer that went
away is ``ConnectionClosed``, which is not an ``RpcError``: it carries no answer from anyone.
Nothing internal reaches the wire: validation failures become a short message of our own naming
the failing member, and unexpected exceptions become a bare ``internal error`` while the
traceback goes to the ``muse_acp.rpc`` logger (stderr), never to the peer.
"""

from __future__ import annotations

import logging
from typing import Final

from pydantic import ValidationError

from muse_acp.rpc.jsonvalue import JsonObject, JsonValue
from muse_acp.rpc.validation import UNKNOWN_INPUT, describe_validation_error
from muse_acp.text import clip

__all__ = [
    "AUTH_REQUIRED",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "RESOURCE_NOT_FOUND",
    "ConnectionClosed",
    "RpcError",
    "error_from_exception",
]

logger: Final = logging.getLogger("muse_acp.rpc")

# -32700..-32600 are JSON-RPC 2.0's own codes; -32800 is the LSP-style cancellation code ACP
# adopted; -32000..-32099 is JSON-RPC's server-error range, where ACP defines its codes.
PARSE_ERROR: Final[int] = -32700
"""The frame is not valid JSON."""
INVALID_REQUEST: Final[int] = -32600
"""The frame is JSON but not a valid JSON-RPC message (or exceeds the frame limit)."""
METHOD_NOT_FOUND: Final[int] = -32601
"""No handler exists for the requested method."""
INVALID_PARAMS: Final[int] = -32602
"""The params do not match what the method expects."""
INTERNAL_ERROR: Final[int] = -32603
"""The handler failed for a reason the peer cannot fix by changing its request."""
REQUEST_CANCELLED: Final[int] = -32800
"""The request was cancelled by its sender before it completed."""
AUTH_REQUIRED: Final[int] = -32000
"""The method needs the peer to authenticate first."""
RESOURCE_NOT_FOUND: Final[int] = -32002
"""A resource named by the request (a session, a file) does not exist."""

_MAX_QUOTED_METHOD: Final = 200
"""Longest method name an error quotes back."""


class RpcError(Exception):
    """A JSON-RPC error: raised by handlers to answer with it, raised to callers on receipt."""

    code: int
    message: str
    data: JsonValue | None

    def __init__(self, code: int, message: str, data: JsonValue | None = None) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return f"{self.message} ({self.code})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"

    def to_object(self) -> JsonObject:
        """Return the wire form ``{"code", "message"[, "data"]}``."""
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_object(cls, error: JsonValue) -> RpcError:
        """Rebuild a peer's error object; a malformed one becomes an INTERNAL_ERROR."""
        if not isinstance(error, dict):
            return cls(INTERNAL_ERROR, "peer sent a malformed error object")
        code = error.get("code")
        message = error.get("message")
        if type(code) is not int:
            return cls(INTERNAL_ERROR, "peer sent an error without an integer code", error)
        return cls(code, message if isinstance(message, str) else "", error.get("data"))

    @classmethod
    def parse_error(cls, message: str = "frame is not valid JSON") -> RpcError:
        return cls(PARSE_ERROR, message)

    @classmethod
    def invalid_request(cls, message: str, data: JsonValue | None = None) -> RpcError:
        return cls(INVALID_REQUEST, message, data)

    @classmethod
    def method_not_found(cls, method: str) -> RpcError:
        # The name is the peer's own, but a frame may hold megabytes of it: quote a bounded part.
        method = clip(method, _MAX_QUOTED_METHOD)
        return cls(METHOD_NOT_FOUND, f"unknown method {method}", {"method": method})

    @classmethod
    def invalid_params(cls, message: str, data: JsonValue | None = None) -> RpcError:
        return cls(INVALID_PARAMS, message, data)

    @classmethod
    def internal_error(
        cls, message: str = "internal error", data: JsonValue | None = None
    ) -> RpcError:
        return cls(INTERNAL_ERROR, message, data)

    @classmethod
    def request_cancelled(cls) -> RpcError:
        return cls(REQUEST_CANCELLED, "request cancelled")


class ConnectionClosed(Exception):
    """Raised to a caller whose outgoing message cannot complete because the connection ended.

    Deliberately not an ``RpcError``: a peer that went away did not answer anything, so code
    that handles the peer's refusals (``except RpcError``) never mistakes one for the other.
    """

    def __init__(self, message: str = "connection closed before a response arrived") -> None:
        super().__init__(message)
        self.message = message


def error_from_exception(
    exc: BaseException, *, method: str | None, params: JsonValue = None
) -> RpcError:
    """Map what a handler raised to the error sent to the peer.

    ``params`` (the input that failed validation, when known) makes a validation message's
    path exact; it is never echoed. Unexpected exceptions are logged with their traceback.
    """
    if isinstance(exc, RpcError):
        return exc
    where = "" if method is None else f" for {method}"
    if isinstance(exc, ConnectionClosed):
        # A connection the handler relied on (not this one) ended; nothing internal to show.
        logger.warning("a connection needed%s closed: %s", where, exc.message)
        return RpcError.internal_error(
            f"a connection needed to answer{where} closed before it could be answered"
        )
    if isinstance(exc, ValidationError):
        detail = describe_validation_error(exc, UNKNOWN_INPUT if params is None else params)
        return RpcError.invalid_params(f"invalid params{where}: {detail}")
    logger.error("unhandled exception in handler%s", where, exc_info=exc)
    return RpcError.internal_error()
