"""A model call Muse will retry, told to the user while the turn waits.

Contract: ``retry_notice`` returns the ``Notice`` for a ``turn/retryScheduled`` (every version)
or ``turn/modelRetryScheduled`` (1.4.8 on) of the given turn, else None. Muse waits out a
backoff before the retry and sends nothing meanwhile, so without it the editor shows dead air:
the notice says which attempt comes next, out of how many, after how long, and why when Muse
says (``reason``, or the error kind of a model retry; the recorded machine message is not user
text). It is a warning shown in the chat of a client without notices (``Notice.chat``): the
one decision of how a retry reaches a plain client.
"""

from __future__ import annotations

from muse_acp.agent.errors.notices import Notice
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["retry_notice"]


def _seconds(delay_ms: int) -> str:
    seconds = max(delay_ms, 0) / 1000
    return f"{seconds:.0f} s" if seconds >= 10 or seconds == int(seconds) else f"{seconds:.1f} s"


def retry_notice(params: WireModel, turn_id: str | None) -> Notice | None:
    """The notice of a retry of turn ``turn_id`` (see the module contract)."""
    if isinstance(params, msp.TurnRetryScheduledParams):
        why = params.reason
    elif isinstance(params, msp.TurnModelRetryScheduledParams):
        why = " ".join(part for part in (params.system, params.error_kind) if part) or None
    else:
        return None
    if turn_id is None or params.turn_id != turn_id:
        return None
    attempt = f"attempt {params.next_attempt} of {params.max_attempts}"
    text = f"Muse's model call failed; retrying in {_seconds(params.retry_delay_ms)} ({attempt})"
    text += f": {why}." if why else "."
    return Notice(severity="warning", title=f"Retrying the model call ({attempt})", text=text)
