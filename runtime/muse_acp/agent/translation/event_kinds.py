"""Which host events each part of a turn handles, answered cheaply.

Contract: ``TURN_LIFECYCLE``, ``ASKS`` and ``STATE_REPORTS`` are the kinds of host event the
turn (``turn``), its approvals and questions (``interactions``) and the session state it shows
(``session_state``) handle themselves; every other event (an item or one of its deltas, nearly
every event of a turn) is only translated. ``ITEM_EVENTS`` are those that carry a whole item,
which the translator looks into for a tool call whose file it must read first.
``EventKinds.holds(event)`` answers exactly what ``isinstance(event, classes)`` would: several
parts of a turn ask it of every host event, and ``isinstance`` on a model class runs
``ABCMeta``'s check in Python, which costs more than the rest of what a text delta asks there;
so each answer is remembered per event type. The types are
the generated models and a few of muse-acp's own, and at most ``MAX_KINDS`` answers are kept
(any beyond are worked out each time): a memo of a pure question, not state.
"""

from __future__ import annotations

from typing import Final

from muse_acp.host.asks import UnreadableAsk
from muse_acp.host.unanswered import UnansweredRequest
from muse_acp_wire import msp

__all__ = [
    "ASKS",
    "ITEM_EVENTS",
    "MAX_KINDS",
    "STATE_REPORTS",
    "TURN_LIFECYCLE",
    "EventKinds",
]

MAX_KINDS: Final = 512
"""Event types whose answer one ``EventKinds`` remembers."""


class EventKinds:
    """``isinstance`` against a fixed tuple of classes, remembered per type."""

    __slots__ = ("_answers", "_classes")

    def __init__(self, *classes: type) -> None:
        self._classes = classes
        self._answers: dict[type, bool] = {}

    def holds(self, event: object) -> bool:
        """Whether ``event`` is an instance of one of the classes."""
        kind = type(event)
        answer = self._answers.get(kind)
        if answer is None:
            answer = isinstance(event, self._classes)
            if len(self._answers) < MAX_KINDS:
                self._answers[kind] = answer
        return answer


TURN_LIFECYCLE: Final = EventKinds(
    msp.TurnStartedParams,
    msp.TurnCompletedParams,
    msp.TurnUnqueuedParams,
    msp.ViewGapParams,
    UnansweredRequest,
)
"""What the turn itself acts on: its start, its end (or drop from Muse's queue), a gap in the
view, a request left unanswered."""
ASKS: Final = EventKinds(
    UnreadableAsk,
    msp.ApprovalRequestedParams,
    msp.ApprovalUpdatedParams,
    msp.ApprovalResolvedParams,
    msp.UserInputRequestedParams,
    msp.UserInputSettledParams,
)
"""Approvals and questions, and the news of their progress."""
STATE_REPORTS: Final = EventKinds(
    msp.ItemEventParams,
    msp.SessionTokenUsageParams,
    msp.SubscriptionUsage,
    msp.SessionModelChangedParams,
    msp.SessionApprovalModeChangedParams,
)
"""What the session state is read from: items (the running work), usage, model and mode."""
ITEM_EVENTS: Final = EventKinds(msp.ItemEventParams)
"""An item started, updated or completed: the events that carry a whole item."""
