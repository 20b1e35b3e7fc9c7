"""Background work after a prompt: the session's host events keep reaching the client.

Contract: ``keep_relaying``, called as a turn starts on a host, makes the turn's ``EventRelay``
the session's follower on that host (``MspHost.follow``): once the turn stopped listening, with
no moment in between, the session's events go to the relay: a workflow, a subagent or a
background tool task that goes on after the prompt ended keeps updating its card (the turn's
translator still holds it, and still drops other turns' items), and the state Muse reports
(usage, model, approval mode) is still shown. A turn Muse starts by itself (a goal's) is handed
at its ``turn/started`` to ``woken``, which follows it as a turn; other lifecycle events, asks
and questions need a running turn and are logged. The next turn on the host takes over as
follower (its translator then drops the earlier turn's items), and it all ends with the host
(idle period, close, a mode change, a turn that left it in an unknown state): background work
and Muse's own turns are followed only while the host is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from muse_acp.agent.turns.relay import EventRelay
from muse_acp.host.asks import UnreadableAsk
from muse_acp.host.client import MspHost
from muse_acp.host.unanswered import UnansweredRequest
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["TurnWake", "keep_relaying"]

logger: Final = logging.getLogger("muse_acp.agent")

_TURN_ONLY: Final = (
    msp.TurnStartedParams,
    msp.TurnCompletedParams,
    msp.ViewGapParams,
    msp.ApprovalRequestedParams,
    msp.ApprovalUpdatedParams,
    msp.ApprovalResolvedParams,
    msp.UserInputRequestedParams,
    msp.UserInputSettledParams,
    UnreadableAsk,
    UnansweredRequest,
)
"""Events that belong to a running turn; between turns there is none to hand them to."""


TurnWake = Callable[[MspHost, msp.TurnStartedParams], bool]
"""Takes up a turn Muse started while no turn of the session listens; False: not taken."""


def keep_relaying(
    host: MspHost, session_id: str, relay: EventRelay, woken: TurnWake | None = None
) -> None:
    """Relay ``session_id``'s events on ``host`` after its turn (see the module contract)."""

    async def on_event(method: str, params: WireModel) -> None:
        if isinstance(params, msp.TurnStartedParams) and woken is not None and woken(host, params):
            return
        if isinstance(params, _TURN_ONLY):
            logger.debug("session %s: %s arrived with no turn running", session_id, method)
            return
        await relay.relay(method, params)

    host.follow(session_id, on_event)
