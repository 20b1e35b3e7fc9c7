"""The short way of a streamed delta, from a host's output to the turn it belongs to.

Contract: a ``DeltaLane`` is the ``rpc.FrameLane`` of one host connection. Nearly every frame a
streaming turn receives is an ``item/delta``; the lane hands such a frame's params to the
``DeltaTaker`` registered for its session (the running turn, see ``client.MspHost.listen``),
without the ordinary way's dispatch, routing and layers of coroutines. It reads a frame with the
ordinary way's own steps, so what a frame does never depends on the way it took: the value
``rpc.decode_plainly`` gives it (what ``decode_frame`` gives a small, plain frame; any other is
declined), the checks ``Connection`` makes of a notification (an object with ``jsonrpc`` "2.0",
no ``id``), and the router's validation of its params (``rpc.validate_params``, with the model
the host client routes ``item/delta`` with). Whatever it declines (returns False) the connection
decodes and routes as usual: a frame not written as hosts write an ``item/delta`` (its
``jsonrpc`` and ``method`` members first, with no space), one that does not read or validate,
and one whose session has no taker.

A taker returns None once the delta is handled, or, when its handling has to wait (the writer
to the client is full), what is left of it, which the connection awaits before it reads on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from muse_acp.rpc import RpcError, decode_plainly, validate_params
from muse_acp_wire import msp

__all__ = ["METHOD", "DeltaLane", "DeltaTaker"]

METHOD: Final = "item/delta"

DeltaTaker = Callable[[msp.ItemDeltaParams], Awaitable[None] | None]
"""Handles one session's delta: None when done, else what is left of it to await."""

_PREFIX: Final = b'{"jsonrpc":"2.0","method":"' + METHOD.encode() + b'",'


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
        if not self._takers or not frame.startswith(_PREFIX):
            return False
        message = decode_plainly(frame)
        if (
            type(message) is not dict
            or "id" in message  # a request, which the ordinary way refuses
            or message.get("jsonrpc") != "2.0"
            or message.get("method") != METHOD  # a member named twice: the last one counts
        ):
            return False
        try:
            params = validate_params(msp.ItemDeltaParams, message.get("params"), METHOD)
        except RpcError:
            return False  # the ordinary way drops it, and says why
        taker = self._takers.get(params.session_id)
        if taker is None:
            return False
        rest = taker(params)
        return True if rest is None else rest
