"""The short way of a streamed delta, from a host's output to the turn it belongs to.

Contract: a ``DeltaLane`` is the ``rpc.FrameLane`` of one host connection: it hands an
``item/delta`` frame's params to the ``DeltaTaker`` registered for its session (the running
turn, see ``client.MspHost.listen``) without the ordinary dispatch. It reads a frame with the
ordinary way's own steps (``rpc.decode_plainly``, the notification checks,
``rpc.validate_params``), so what a frame does never depends on the way it took. Whatever it
declines (returns False: not written as hosts write a delta, not readable or valid, or no
taker) the connection handles as usual. A taker returns None once the delta is handled, or what
is left of it when it must wait, which the connection awaits before it reads on.
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
