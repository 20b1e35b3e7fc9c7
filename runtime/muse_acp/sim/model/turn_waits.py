"""What the simulated host tells of a turn that waits, and how a turn fails.

Contract: ``announce`` plays a wait. ``sim:retry`` emits one retry announcement for the running
turn, as a durable view event: ``turn/modelRetryScheduled`` where the version publishes it
(1.4.8 on), else ``turn/retryScheduled`` (every version); the call is then retried at once (the
backoff, ``RETRY_DELAY_MS``, is reported, never waited out, so a test needs no clock).
``sim:foreground`` ends the turn's foreground work: where the version publishes it,
``turn/foregroundCompleted`` names the background check that holds the turn open; then that
check reports (an agent message, ``CHECK_REPORT``) and the turn goes on to its end.
``simulated_failure`` is the error a turn ends with when retries do not help (``sim:fail``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from muse_acp.sim.script.directives import Foreground, Retry
from muse_acp_wire.msp import (
    TurnError,
    TurnForegroundCompletedParams,
    TurnModelRetryScheduledParams,
    TurnRetryScheduledParams,
)

if TYPE_CHECKING:
    from muse_acp.sim.model.turn import Turn
    from muse_acp.sim.state.session import Position

__all__ = [
    "CHECK_REPORT",
    "REMINDER_CHECK",
    "RETRYABLE_FAILURES",
    "RETRY_DELAY_MS",
    "RETRY_REASON",
    "announce",
    "schedule_retry",
    "simulated_failure",
]

RETRY_DELAY_MS: Final = 1500
RETRY_REASON: Final = "overloaded"
"""The error kind (and, on hosts without model retries, the reason) a simulated retry gives."""
RETRYABLE_FAILURES: Final = frozenset({"modelError", "environmentError"})
"""The failure kinds the host marks as worth a new prompt (``sim:fail KIND``)."""
REMINDER_CHECK: Final = "reminder-check"
"""The background check ``sim:foreground`` names."""
CHECK_REPORT: Final = "[reminder check: nothing to add]"
ATTEMPTS: Final = (1, 2, 3)
"""The failed attempt, the next one and the most there will be."""


async def announce(turn: Turn, directive: Retry | Foreground) -> None:
    """Play ``sim:retry`` or ``sim:foreground`` (see the module contract)."""
    if isinstance(directive, Retry):
        await schedule_retry(turn)
        return
    session = turn.session
    if turn.ctx.profile.publishes("turn/foregroundCompleted"):
        await session.emit(
            "turn/foregroundCompleted",
            lambda pos: TurnForegroundCompletedParams(
                session_id=session.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                turn_id=turn.turn_id,
                blocking_agents=[REMINDER_CHECK],
            ),
        )
    await turn.say(CHECK_REPORT)


async def schedule_retry(turn: Turn) -> None:
    session = turn.session
    attempt, next_attempt, most = ATTEMPTS
    if turn.ctx.profile.publishes("turn/modelRetryScheduled"):

        def model(pos: Position) -> TurnModelRetryScheduledParams:
            assert pos.source_range is not None  # a durable event always has its range
            return TurnModelRetryScheduledParams(
                session_id=session.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                turn_id=turn.turn_id,
                attempt=attempt,
                next_attempt=next_attempt,
                max_attempts=most,
                retry_delay_ms=RETRY_DELAY_MS,
                error_kind=RETRY_REASON,
            )

        await session.emit("turn/modelRetryScheduled", model)
        return
    await session.emit(
        "turn/retryScheduled",
        lambda pos: TurnRetryScheduledParams(
            session_id=session.session_id,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            turn_id=turn.turn_id,
            attempt=attempt,
            next_attempt=next_attempt,
            max_attempts=most,
            retry_delay_ms=RETRY_DELAY_MS,
            reason=RETRY_REASON,
        ),
    )


def simulated_failure(kind: str) -> TurnError:
    """The error of a turn failed with ``kind`` (``sim:fail``)."""
    retryable = kind in RETRYABLE_FAILURES
    return TurnError(kind=kind, message=f"simulated {kind} failure", retryable=retryable)
