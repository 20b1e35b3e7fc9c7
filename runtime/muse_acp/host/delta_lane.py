"""The short way of a streamed delta, from a host's output to the turn it belongs to.

Contract: a ``DeltaLane`` is the ``rpc.FrameLane`` of one host connection. Nearly every frame a
streaming turn receives is an ``item/delta``; the lane validates such a frame in one step and
hands its params to the ``DeltaTaker`` registered for its session (the running turn, see
``client.MspHost.listen``), without the ordinary way's decoding into a dict, routing and layers
of coroutines. It takes a frame only when the ordinary way would make exactly the same of it,
and declines every other (returns False: the connection then decodes and routes the frame as
usual), so what a frame does never depends on the way it took. It takes a frame when:

* the frame begins as hosts write an ``item/delta`` notification (its ``jsonrpc`` and ``method``
  members first, with no space), and spells neither ``"id"`` (an ``id`` member would make it a
  request) nor ``NaN`` nor ``Infinity`` (which the ordinary decoder refuses and a one-step
  validation would read as numbers); a frame whose text merely holds them is declined too;
* it is within the frame limits without a walk of its value (``rpc.plainly_within_limits``);
* it validates as that notification, with the params model the router gives ``item/delta``;
* its session has a taker.

A taker returns None once the delta is handled, or, when its handling has to wait (the writer
to the client is full), what is left of it, which the connection awaits before it reads on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, Literal

from pydantic import ValidationError

from muse_acp.rpc import plainly_within_limits
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["METHOD", "DeltaLane", "DeltaNotification", "DeltaTaker"]

METHOD: Final = "item/delta"

DeltaTaker = Callable[[msp.ItemDeltaParams], Awaitable[None] | None]
"""Handles one session's delta: None when done, else what is left of it to await."""

_PREFIX: Final = b'{"jsonrpc":"2.0","method":"' + METHOD.encode() + b'",'
_ID: Final = b'"id"'


class DeltaNotification(WireModel):
    """An ``item/delta`` notification frame, validated whole in one step."""

    jsonrpc: Literal["2.0"]
    method: Literal["item/delta"]
    params: msp.ItemDeltaParams


class DeltaLane:
    """Hands a host's ``item/delta`` frames to their session's taker (see the module contract)."""

    __slots__ = ("_takers",)

    def __init__(self) -> None:
        self._takers: dict[str, DeltaTaker] = {}

    def register(self, session_id: str, taker: DeltaTaker | None) -> None:
        """Hand ``session_id``'s deltas to ``taker`` from now on; None: to nobody (the ordinary
        way delivers them)."""
        if taker is None:
            self._takers.pop(session_id, None)
        else:
            self._takers[session_id] = taker

    def __call__(self, frame: bytes) -> bool | Awaitable[None]:
        if (
            not self._takers
            or not frame.startswith(_PREFIX)
            or _ID in frame
            or b"NaN" in frame
            or b"Infinity" in frame
            or not plainly_within_limits(frame)
        ):
            return False
        try:
            notification = DeltaNotification.__pydantic_validator__.validate_json(
                frame, by_alias=True, by_name=False
            )
        except ValidationError:
            return False  # the ordinary way drops it, and says why
        params = notification.params
        taker = self._takers.get(params.session_id)
        if taker is None:
            return False
        rest = taker(params)
        return True if rest is None else rest
