"""One correction handed to a running turn with ``turn/steer``.

Contract: ``send_correction`` sends a correction at most once and never retries it or turns it
into a new turn. Muse refusing it is the caller's error (``INVALID_REQUEST`` with Muse's
reason); an acknowledgement that names another turn is an internal error; a correction whose
outcome is unknown (no acknowledgement within the submit budget, the host gone) fails the turn
too, since it cannot go on in an unknown state. The turn is reached only through
``CorrectableTurn``.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from muse_acp.agent.errors import failures
from muse_acp.ids import new_uuid7
from muse_acp.rpc import INTERNAL_ERROR, INVALID_REQUEST, RpcError
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["CorrectableTurn", "send_correction"]

R = TypeVar("R", bound=WireModel)


class CorrectableTurn(Protocol):
    """What a correction needs of its turn (``turn.ActiveTurn`` is one)."""

    @property
    def session_id(self) -> str: ...

    @property
    def turn_id(self) -> str | None: ...

    @property
    def steerable(self) -> bool: ...

    def fail(self, error: RpcError) -> None: ...

    async def ask_host(
        self, method: str, params: WireModel, result_type: type[R], phase: failures.Phase
    ) -> R: ...


async def send_correction(turn: CorrectableTurn, parts: list[msp.TurnInputPart]) -> str:
    """Send ``parts`` to ``turn`` with ``turn/steer``; return the turn id Muse named.

    Raises:
        RpcError: the turn is no longer steerable, Muse refused the correction, its
            acknowledgement did not name this turn, or the correction's outcome is unknown
            (the turn then fails too, with the same failure).
    """
    turn_id = turn.turn_id
    if not turn.steerable or turn_id is None:
        raise RpcError(INVALID_REQUEST, "the turn has ended; there is no running turn to steer")
    params = msp.TurnSteerParams(
        command_id=new_uuid7(), session_id=turn.session_id, expected_turn_id=turn_id, input=parts
    )
    try:
        ack = await turn.ask_host("turn/steer", params, msp.TurnCommandResult, "steering")
    except failures.HostRefusal as refused:
        raise RpcError(
            INVALID_REQUEST,
            f"Muse did not accept the correction for turn {turn_id}: {refused.message}",
            refused.data,
        ) from None
    except RpcError as failure:
        # The correction may or may not have reached the model; the turn cannot go on in an
        # unknown state, and the steering caller hears why.
        turn.fail(failure)
        raise
    if ack.status != "accepted" or ack.turn_id != turn_id:
        raise RpcError(
            INTERNAL_ERROR,
            f"Muse acknowledged the correction for turn {ack.turn_id} with status {ack.status}, "
            f"not for turn {turn_id}",
        )
    return ack.turn_id
