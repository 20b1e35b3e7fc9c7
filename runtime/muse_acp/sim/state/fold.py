"""The state of a session as folded from its durable view events.

Contract: ``Fold.apply`` takes durable events in log order (``method`` and decoded ``params``)
and keeps what the host answers from: the head cursor position, the latest revision of every
item in order of first appearance (and where it first appeared, for ``sourceRange``), the turn in
progress, completed turns, approvals and questions still pending (with their current members),
resolved approvals (for late decisions) and the cumulative token usage. The lease holder folds
events as it writes them; any other process folds the log it reads, so both answer alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

__all__ = ["Fold", "Pending", "Resolution"]


@dataclass(slots=True)
class Pending:
    """An approval or question still awaiting the client."""

    kind: str
    """``approval`` or ``userInput``."""
    params: dict[str, Any]
    """The request's params, with later ``approval/updated`` members applied."""
    cursor: str


@dataclass(frozen=True, slots=True)
class Resolution:
    """How an approval ended, as a late decision is told."""

    decision: str
    resolved_by: str
    cursor: str


@dataclass(slots=True)
class Fold:
    """See the module contract."""

    head: int = 0
    items: dict[str, dict[str, Any]] = field(default_factory=dict)
    item_first: dict[str, int] = field(default_factory=dict)
    active_turn: str | None = None
    active_command: str | None = None
    turn_ends: dict[str, int] = field(default_factory=dict)
    """Completed turn id -> position of its ``turn/completed``, in completion order."""
    retracted: set[str] = field(default_factory=set)
    pending: dict[str, Pending] = field(default_factory=dict)
    resolutions: dict[str, Resolution] = field(default_factory=dict)
    settled: set[str] = field(default_factory=set)
    cumulative: dict[str, Any] | None = None
    """The session's latest ``cumulative`` token usage block, as sent (None: no step yet)."""
    goal: dict[str, Any] | None = None
    """The session goal as ``session/goalChanged`` last recorded it (None: no goal)."""

    @classmethod
    def from_lines(cls, lines: Iterable[bytes]) -> Fold:
        fold = cls()
        for line in lines:
            event = json.loads(line)
            fold.apply(event["method"], event["params"])
        return fold

    @property
    def turn_count(self) -> int:
        return sum(1 for turn in self.turn_ends if turn not in self.retracted)

    def apply(self, method: str, params: dict[str, Any]) -> None:
        self.head += 1
        folder = _FOLDERS.get(method)
        if folder is not None:
            folder(self, params)

    def turn_items(self, turn_ids: Iterable[str]) -> list[dict[str, Any]]:
        """The latest state of the items of the given turns, in order of first appearance."""
        wanted = set(turn_ids)
        return [item for item in self.items.values() if item.get("turnId") in wanted]


def _item(fold: Fold, params: dict[str, Any]) -> None:
    item = params["item"]
    item_id = item["itemId"]
    known = fold.items.get(item_id)
    if known is None or item["revision"] >= known["revision"]:
        fold.items[item_id] = item
    fold.item_first.setdefault(item_id, fold.head)


def _turn_started(fold: Fold, params: dict[str, Any]) -> None:
    fold.active_turn = params["turnId"]
    fold.active_command = params.get("commandId")


def _turn_completed(fold: Fold, params: dict[str, Any]) -> None:
    turn_id = params["turnId"]
    fold.turn_ends[turn_id] = fold.head
    if turn_id == fold.active_turn:
        fold.active_turn = fold.active_command = None


def _turn_retracted(fold: Fold, params: dict[str, Any]) -> None:
    fold.retracted.add(params["turnId"])


def _approval_requested(fold: Fold, params: dict[str, Any]) -> None:
    fold.pending[params["approvalId"]] = Pending("approval", dict(params), params["viewCursor"])


def _approval_updated(fold: Fold, params: dict[str, Any]) -> None:
    pending = fold.pending.get(params["approvalId"])
    if pending is None:
        return
    for member in ("currentRequirementId", "subject", "availableChoices"):
        if member in params:
            pending.params[member] = params[member]


def _approval_resolved(fold: Fold, params: dict[str, Any]) -> None:
    approval_id = params["approvalId"]
    fold.pending.pop(approval_id, None)
    fold.resolutions[approval_id] = Resolution(
        params["decision"], params["resolvedBy"], params["viewCursor"]
    )


def _input_requested(fold: Fold, params: dict[str, Any]) -> None:
    fold.pending[params["userInputId"]] = Pending("userInput", dict(params), params["viewCursor"])


def _input_settled(fold: Fold, params: dict[str, Any]) -> None:
    fold.pending.pop(params["userInputId"], None)
    fold.settled.add(params["userInputId"])


def _token_usage(fold: Fold, params: dict[str, Any]) -> None:
    total = params.get("cumulative")
    if isinstance(total, dict):
        fold.cumulative = total


def _goal_changed(fold: Fold, params: dict[str, Any]) -> None:
    goal = params.get("goal")
    fold.goal = goal if isinstance(goal, dict) else None


_FOLDERS: Final[Mapping[str, Callable[[Fold, dict[str, Any]], None]]] = MappingProxyType(
    {
        "item/started": _item,
        "item/updated": _item,
        "item/completed": _item,
        "turn/started": _turn_started,
        "turn/completed": _turn_completed,
        "turn/retracted": _turn_retracted,
        "approval/requested": _approval_requested,
        "approval/updated": _approval_updated,
        "approval/resolved": _approval_resolved,
        "userInput/requested": _input_requested,
        "userInput/settled": _input_settled,
        "session/tokenUsage": _token_usage,
        "session/goalChanged": _goal_changed,
    }
)
"""Durable event method -> how it changes the fold; other events only advance the head."""
