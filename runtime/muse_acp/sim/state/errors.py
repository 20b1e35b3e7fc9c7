"""Host errors as real Muse hosts shape them: a code, a message and ``ErrorData`` with a kind.

Contract: every error muse-sim puts on the wire carries ``data.kind``. Handlers raise errors made
here (``host_error`` and the named constructors, which take their codes from the generated error
registry); ``with_kind`` gives a kind to any error that reached the host layer without one (the
JSON-RPC runtime's own errors carry none), so no error leaves the host kind-less. Messages are
short lower-case sentences of muse-sim's own that name the offending id (but for
``reviewer_unavailable``, which clients recognise by its text and so reads as real hosts');
nothing internal (no exception text, no traceback) is ever included.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from muse_acp.rpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    JsonValue,
    RpcError,
)
from muse_acp_wire.msp import ERRORS, ErrorData

__all__ = [
    "KIND_CODES",
    "already_initialized",
    "backpressured",
    "command_rejected",
    "experimental_required",
    "host_error",
    "input_too_large",
    "internal",
    "invalid_params",
    "invalid_request",
    "method_not_found",
    "not_initialized",
    "parse_error",
    "reviewer_unavailable",
    "session_in_use",
    "session_not_found",
    "session_not_loaded",
    "with_kind",
]

KIND_CODES: Final[Mapping[str, int]] = MappingProxyType(
    {
        **{row.kind: row.code for row in ERRORS},
        # Kinds that share a code with a registry row (the registry names them as overrides).
        "notInitialized": -32600,
        "alreadyInitialized": -32600,
        "experimentalRequired": -32601,
        "pageEventTooLarge": -32603,
        "outputResultTooLarge": -32603,
        "boundaryUnusable": -32042,
        "noBoundary": -32042,
    }
)
"""Error kind -> JSON-RPC code."""

_DEFAULT_KINDS: Final[Mapping[int, str]] = MappingProxyType({row.code: row.kind for row in ERRORS})
"""JSON-RPC code -> its registry kind, for errors raised without one."""


def host_error(message: str, data: ErrorData) -> RpcError:
    """An error whose code follows from ``data.kind``."""
    code = KIND_CODES.get(data.kind, INTERNAL_ERROR)
    payload: JsonValue = data.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return RpcError(code, message, payload)


def parse_error() -> RpcError:
    return host_error("the frame is not valid JSON", ErrorData(kind="parseError"))


def invalid_request(message: str) -> RpcError:
    return host_error(message, ErrorData(kind="invalidRequest"))


def input_too_large(limit: int) -> RpcError:
    return host_error(
        f"frame exceeds the {limit}-byte limit", ErrorData(kind="inputTooLarge", limit_bytes=limit)
    )


def not_initialized() -> RpcError:
    return host_error("the connection is not initialized yet", ErrorData(kind="notInitialized"))


def already_initialized() -> RpcError:
    return host_error(
        "this connection is already initialized", ErrorData(kind="alreadyInitialized")
    )


def method_not_found(message: str = "this host does not serve that method") -> RpcError:
    return host_error(message, ErrorData(kind="methodNotFound"))


def experimental_required(descriptor: str) -> RpcError:
    """An experimental method called on a connection that did not opt in (-32601)."""
    return host_error(
        f"{descriptor} is experimental: initialize with the experimentalApi capability to use it",
        ErrorData(kind="experimentalRequired", descriptor=descriptor),
    )


def invalid_params(message: str) -> RpcError:
    return host_error(message, ErrorData(kind="invalidParams", retryable=False))


def internal(message: str = "internal error") -> RpcError:
    return host_error(message, ErrorData(kind="internal", retryable=False))


def reviewer_unavailable(profile: str) -> RpcError:
    """No session can run under ``profile`` on this host: it needs Muse's automated reviewer,
    which ``serve`` does not run. Worded as real hosts word it, since clients recognise it so."""
    return host_error(
        "internal error: compose session permission profile: permission profile "
        f"'{profile}' cannot be used: the automated reviewer is unavailable on this host",
        ErrorData(kind="internal", retryable=False),
    )


def backpressured(capacity: int) -> RpcError:
    return host_error(
        f"too many commands in flight (capacity {capacity}); retry once one is answered",
        ErrorData(kind="backpressured", retryable=True, capacity=capacity),
    )


def command_rejected(method: str, command_id: str, reason: str) -> RpcError:
    return host_error(
        f"{method} refused command {command_id} ({reason})",
        ErrorData(kind="commandRejected", retryable=False, command_id=command_id, reason=reason),
    )


def session_not_found(session_id: str) -> RpcError:
    return host_error(
        f"there is no session {session_id}",
        ErrorData(kind="sessionNotFound", retryable=False, session_id=session_id),
    )


def session_in_use(session_id: str) -> RpcError:
    return host_error(
        f"session {session_id} is held by another host process",
        ErrorData(kind="sessionInUse", retryable=False, session_id=session_id),
    )


def session_not_loaded(session_id: str) -> RpcError:
    return host_error(
        f"session {session_id} is not loaded on this connection; resume it first",
        ErrorData(kind="sessionNotLoaded", retryable=False, session_id=session_id),
    )


def with_kind(error: RpcError) -> RpcError:
    """``error`` itself if its data has a kind, else the same failure shaped as a host error."""
    data = error.data
    if isinstance(data, dict) and isinstance(data.get("kind"), str):
        return error
    if error.code == METHOD_NOT_FOUND:
        return method_not_found(error.message)
    if error.code == INVALID_PARAMS:
        return invalid_params(error.message)
    if error.code == PARSE_ERROR:
        return parse_error()
    if error.code == INVALID_REQUEST:
        return invalid_request(error.message)
    kind = _DEFAULT_KINDS.get(error.code)
    if kind is None:
        return internal()
    return host_error(error.message, ErrorData(kind=kind))
