"""What Muse says of a running turn that waits, told to the user: a retry, background checks.

Contract: ``wait_notice`` returns the ``Notice`` for an event of the given turn that says it
waits, else None. A ``turn/retryScheduled`` (every version) or ``turn/modelRetryScheduled``
(1.4.8 on): Muse waits out a backoff before calling the model again and sends nothing meanwhile,
so the notice says which attempt comes next, out of how many, after how long, and why when Muse
says (``reason``, or a model retry's error kind: its recorded message is not user text); a
warning, also in the chat of a client without notices. A ``turn/foregroundCompleted``: the
answer is complete while Muse's background checks hold the turn open; the prompt still ends
only at ``turn/completed`` (the event is not terminal, and a check may still add to the turn
or fail it), so the notice says what it waits on; information, in muse-acp's log alone for a
client without notices, whose chat already shows the whole answer. ``Notice.chat`` is the one
decision of what a plain client sees of each.
"""

from __future__ import annotations

from typing import Final

from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.translation.event_kinds import EventKinds
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["wait_notice"]

_WAITS: Final = EventKinds(
    msp.TurnRetryScheduledParams,
    msp.TurnModelRetryScheduledParams,
    msp.TurnForegroundCompletedParams,
)
"""The events that say a turn waits: asked of every event relayed, answered cheaply."""


def _seconds(delay_ms: int) -> str:
    seconds = max(delay_ms, 0) / 1000
    return f"{seconds:.0f} s" if seconds >= 10 or seconds == int(seconds) else f"{seconds:.1f} s"


def _retry(params: msp.TurnRetryScheduledParams | msp.TurnModelRetryScheduledParams) -> Notice:
    if isinstance(params, msp.TurnRetryScheduledParams):
        why = params.reason
    else:
        why = " ".join(part for part in (params.system, params.error_kind) if part) or None
    attempt = f"attempt {params.next_attempt} of {params.max_attempts}"
    text = f"Muse's model call failed; retrying in {_seconds(params.retry_delay_ms)} ({attempt})"
    text += f": {why}." if why else "."
    return Notice(severity="warning", title=f"Retrying the model call ({attempt})", text=text)


def _foreground(params: msp.TurnForegroundCompletedParams) -> Notice:
    checks = ", ".join(params.blocking_agents) or "unnamed"
    return Notice(
        severity="info",
        title="Muse's answer is complete; its background checks are still running",
        text=(
            f"Muse finished its answer. Its background checks ({checks}) keep the turn open; "
            "the prompt ends when they are done (Stop ends them now)."
        ),
        chat=False,
    )


def wait_notice(params: WireModel, turn_id: str | None) -> Notice | None:
    """The notice of a wait of turn ``turn_id`` (see the module contract)."""
    if not _WAITS.holds(params):  # nearly every event
        return None
    if isinstance(params, msp.TurnRetryScheduledParams | msp.TurnModelRetryScheduledParams):
        return _retry(params) if turn_id is not None and params.turn_id == turn_id else None
    if isinstance(params, msp.TurnForegroundCompletedParams):
        return _foreground(params) if turn_id is not None and params.turn_id == turn_id else None
    return None
