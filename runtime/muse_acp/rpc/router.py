"""Typed method routing on top of ``Connection``.

Contract: a ``Router`` is a ``MessageHandler`` built from typed routes, each tying a method name
to a pydantic params model and a handler, so handlers always receive a model (params validated
by alias; missing params as ``{}``). For requests, an unknown method is answered
METHOD_NOT_FOUND and params that do not validate INVALID_PARAMS, in words of our own; a route
that ``changes_state`` lets its handler ``RequestContext.commit``. Unknown or invalid
notifications are logged, never answered. ``validate_params`` is that validation, for a short way
that routes frames itself. ``call`` validates the peer's result into a model (``typed_result``),
a malformed one being INTERNAL_ERROR; ``call_forwarding`` also returns one long string member's
token as the peer wrote it (``splice.result_string_token``), or None.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Generic, TypeVar, cast

from pydantic import BaseModel, ValidationError

from muse_acp.rpc.dispatcher import Connection
from muse_acp.rpc.errors import RpcError, error_from_exception
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp.rpc.request_context import RequestContext, Result
from muse_acp.rpc.splice import result_string_token
from muse_acp.rpc.transport import Payload
from muse_acp.rpc.validation import describe_validation_error

__all__ = [
    "NotificationRoute",
    "RequestRoute",
    "Router",
    "call",
    "call_forwarding",
    "typed_result",
    "validate_params",
]

logger: Final = logging.getLogger("muse_acp.rpc")

_P = TypeVar("_P", bound=BaseModel)
_R = TypeVar("_R", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class RequestRoute(Generic[_P]):
    """Serves ``method`` requests: params validated as ``params``, answered by ``handler``;
    one that ``changes_state`` makes its change inside ``RequestContext.commit``."""

    method: str
    params: type[_P]
    handler: Callable[[_P, RequestContext], Awaitable[Result]]
    changes_state: bool = False


@dataclass(frozen=True, slots=True)
class NotificationRoute(Generic[_P]):
    """Handles ``method`` notifications: params validated as ``params``, given to ``handler``."""

    method: str
    params: type[_P]
    handler: Callable[[_P], Awaitable[None]]


_RouteT = TypeVar("_RouteT", RequestRoute[Any], NotificationRoute[Any])


def _table(routes: Iterable[_RouteT], kind: str) -> MappingProxyType[str, _RouteT]:
    table: dict[str, _RouteT] = {}
    for route in routes:
        if route.method in table:
            raise ValueError(f"duplicate {kind} route for {route.method}")
        table[route.method] = route
    return MappingProxyType(table)


def validate_params(model: type[_P], params: JsonValue, method: str) -> _P:
    """``params`` of ``method`` as ``model``, validated as a route's are.

    Raises:
        RpcError: INVALID_PARAMS, saying what did not validate.
    """
    data: JsonValue = {} if params is None else params
    if not isinstance(data, dict):
        raise RpcError.invalid_params(f"invalid params for {method}: params must be an object")
    try:
        # The model's own validator, as ``model_validate`` calls it, minus that wrapper's cost,
        # which is no small part of validating a small frame.
        validated = model.__pydantic_validator__.validate_python(data, by_alias=True, by_name=False)
        return cast(_P, validated)
    except ValidationError as exc:
        raise error_from_exception(exc, method=method, params=data) from None


class Router:
    """A ``MessageHandler`` dispatching to typed routes (see the module contract).

    Raises:
        ValueError: at construction, when two routes of the same kind share a method.
    """

    def __init__(
        self,
        requests: Iterable[RequestRoute[Any]] = (),
        notifications: Iterable[NotificationRoute[Any]] = (),
    ) -> None:
        self._requests: Mapping[str, RequestRoute[Any]] = _table(requests, "request")
        self._notifications: Mapping[str, NotificationRoute[Any]] = _table(
            notifications, "notification"
        )

    @property
    def requests(self) -> Mapping[str, RequestRoute[Any]]:
        """The request routes by method (read-only)."""
        return self._requests

    @property
    def notifications(self) -> Mapping[str, NotificationRoute[Any]]:
        """The notification routes by method (read-only)."""
        return self._notifications

    async def handle_request(
        self, method: str, params: JsonValue | None, ctx: RequestContext
    ) -> Result:
        route = self._requests.get(method)
        if route is None:
            raise RpcError.method_not_found(method)
        if route.changes_state:
            ctx.declare_changes_state()
        return await route.handler(validate_params(route.params, params, method), ctx)

    async def handle_notification(self, method: str, params: JsonValue | None) -> None:
        route = self._notifications.get(method)
        if route is None:
            logger.debug("ignored notification %s: no route", method)
            return
        try:
            model = validate_params(route.params, params, method)
        except RpcError as exc:
            logger.warning("dropped notification: %s", exc.message)
            return
        await route.handler(model)


async def call(conn: Connection, method: str, params: Payload, result_type: type[_R]) -> _R:
    """Send a request and validate its result as ``result_type`` (see ``typed_result``).

    Raises:
        RpcError: the peer answered with an error, or its result did not validate
            (INTERNAL_ERROR).
        ConnectionClosed: the connection ended before the response arrived.
    """
    return typed_result(conn, method, await conn.request(method, params), result_type)


async def call_forwarding(
    conn: Connection, method: str, params: Payload, result_type: type[_R], member: str
) -> tuple[_R, bytes | None]:
    """``call``, and the JSON token of the result's string ``member`` as the peer spelled it
    (None when it cannot be proven, see ``splice``).

    Raises:
        RpcError: as ``call``.
        ConnectionClosed: as ``call``.
    """
    outgoing = await conn.start_request(method, params, keep_frame=True)
    raw = await outgoing.result()
    result = typed_result(conn, method, raw, result_type)
    frame = outgoing.frame
    return result, None if frame is None else result_string_token(frame, raw, member)


def typed_result(conn: Connection, method: str, raw: JsonValue, result_type: type[_R]) -> _R:
    """The raw result ``conn``'s peer gave to ``method``, validated as ``result_type``.

    A ``null`` result validates as ``{}``, for peers that answer empty results with ``null``.

    Raises:
        RpcError: the result did not validate (INTERNAL_ERROR).
    """
    data: JsonValue = {} if raw is None else raw
    try:
        return result_type.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as exc:
        detail = describe_validation_error(exc, data)
        logger.warning("%s: invalid result for %s: %s", conn.name, method, detail)
        raise RpcError.internal_error(f"invalid result for {method}: {detail}") from None
