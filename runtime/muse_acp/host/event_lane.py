"""The short way of a session's events, from a host's output to the session listening to them.

Contract: an ``EventLane`` is the ``rpc.FrameLane`` of one host connection. It takes a
notification of ``events`` (each method the host client hands to sessions, with the model its
route validates it with) whose session has a listener (``register``, see ``client.MspHost.listen``)
and hands it over without the ordinary dispatch: an ``item/delta`` to the session's
``DeltaTaker`` when it registered one (the running turn), every other event to its listener. It
reads a frame with the ordinary way's own steps (``rpc.decode_plainly``, the notification
checks, ``rpc.validate_params``), so what a frame does never depends on the way it took.
Whatever it declines (returns False: not written as hosts write a notification, not readable or
valid, not one of ``events``, of no session or of one nobody listens to) the connection handles
as usual. A taker returns None once the delta is handled, or what is left of it when it must
wait; what a listener does is what is left. The connection awaits what is left before it reads on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Final

from muse_acp.host.asks import ASK_METHODS
from muse_acp.rpc import RpcError, decode_plainly, validate_params
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["DELTA", "SESSION_EVENTS", "DeltaTaker", "EventLane", "EventListener"]

DELTA: Final = "item/delta"

EventListener = Callable[[str, WireModel], Awaitable[None]]
"""Handles one event of a session: its method and its params."""
DeltaTaker = Callable[[msp.ItemDeltaParams], Awaitable[None] | None]
"""Handles one session's delta: None when done, else what is left of it to await."""

_PREFIX: Final = b'{"jsonrpc":"2.0","method":"'
"""How hosts begin a notification (a frame written otherwise takes the ordinary way)."""

SESSION_EVENTS: Final[Mapping[str, type[WireModel]]] = MappingProxyType(
    {
        **{
            method: spec.params
            for method, spec in msp.CLIENT_NOTIFICATIONS.items()
            if spec.params is not None and method not in ASK_METHODS
        },
        # Newer than the vocabulary's table, read with the models it adds (``msp_additions``);
        # a host that does not declare one never sends it.
        "turn/modelRetryScheduled": msp.TurnModelRetryScheduledParams,
        "approval/reviewing": msp.ApprovalRequestParams,
    }
)
"""The notifications handed to sessions as they are (asks are read first, ``asks``), each with
the model it is validated with: the host client's routes and the event lane read them alike."""


class EventLane:
    """Hands a host's session events to their listeners (see the module contract)."""

    __slots__ = ("_events", "_listeners", "_takers")

    def __init__(self, events: Mapping[str, type[WireModel]]) -> None:
        self._events = events
        self._listeners: dict[str, EventListener] = {}
        self._takers: dict[str, DeltaTaker] = {}

    def register(
        self, session_id: str, listener: EventListener | None, deltas: DeltaTaker | None = None
    ) -> None:
        """Hand ``session_id``'s events to ``listener`` from now on, and its deltas to
        ``deltas`` (to ``listener`` when None); a None listener: to nobody (the ordinary way
        delivers them)."""
        if listener is None:
            self._listeners.pop(session_id, None)
        else:
            self._listeners[session_id] = listener
        if listener is None or deltas is None:
            self._takers.pop(session_id, None)
        else:
            self._takers[session_id] = deltas

    def __call__(self, frame: bytes) -> bool | Awaitable[None]:
        if not self._listeners or not frame.startswith(_PREFIX):
            return False
        message = decode_plainly(frame)
        if type(message) is not dict or "id" in message or message.get("jsonrpc") != "2.0":
            return False  # "id": a request, which the ordinary way answers
        method = message.get("method")  # a member named twice: the last one counts
        if type(method) is not str:
            return False
        model = self._events.get(method)
        if model is None:
            return False
        try:
            params = validate_params(model, message.get("params"), method)
        except RpcError:
            return False  # the ordinary way drops it, and says why
        session_id = getattr(params, "session_id", None)
        listener = self._listeners.get(session_id) if type(session_id) is str else None
        if listener is None:
            return False
        if type(params) is msp.ItemDeltaParams:
            taker = self._takers.get(params.session_id)
            if taker is not None:
                rest = taker(params)
                return True if rest is None else rest
        return listener(method, params)
