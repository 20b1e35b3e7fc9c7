"""A turn's approvals stay at their latest stage whatever order the host's twins arrive in."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from muse_acp.agent.interactions import Interactions
from muse_acp.agent.turn import ActiveTurn
from muse_acp.msp_types import msp

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "msp" / "valid"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    return data


def _interactions() -> Interactions:
    # No task group: events are only recorded, nothing is asked.
    turn = SimpleNamespace(turn_id=None, tasks=None, settled=False, cancel_requested=False)
    return Interactions(cast(ActiveTurn, turn))


def test_a_late_repeat_of_the_request_does_not_roll_an_approval_back() -> None:
    requested = msp.ApprovalRequestedParams.model_validate(_load("approval_requested.json"))
    updated = msp.ApprovalUpdatedParams.model_validate(_load("approval_updated.json"))
    interactions = _interactions()
    interactions.on_event(requested)
    interactions.on_event(updated)
    # The server-request twin of the first event, delivered from its own task, comes last.
    interactions.on_event(requested)
    view = interactions.current(requested.approval_id)
    assert view is not None
    assert view.key == (requested.approval_id, 1)


def test_a_resolved_approval_is_not_revived_by_a_late_repeat() -> None:
    requested = msp.ApprovalRequestedParams.model_validate(_load("approval_requested.json"))
    resolved = msp.ApprovalResolvedParams.model_validate(_load("approval_resolved.json"))
    interactions = _interactions()
    interactions.on_event(requested)
    interactions.on_event(resolved.model_copy(update={"approval_id": requested.approval_id}))
    interactions.on_event(requested)
    assert interactions.current(requested.approval_id) is None
