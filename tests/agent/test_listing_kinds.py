"""Which rows of Muse's ``session/list`` muse-acp lists: every kind but a subagent's own session
(reached by its parent's card), an unknown kind included, as Muse asks of its clients, and
rows of hosts that say no kind (before 1.4.4)."""

from __future__ import annotations

from typing import Any

import pytest

from muse_acp.agent.methods.listing import listed
from muse_acp_wire import msp


def _row(**more: Any) -> msp.Session:
    return msp.Session.model_validate(
        {
            "sessionId": "s-1",
            "path": "",
            "status": "notLoaded",
            "activeTurnId": None,
            "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-01T00:00:00Z",
            "workspaceRoot": "/projects/demo",
            "providerId": None,
            "modelId": None,
            "turnCount": 1,
            "forkedFrom": None,
            **more,
        }
    )


@pytest.mark.parametrize(
    ("members", "shown"),
    [
        ({}, True),
        ({"kind": "root"}, True),
        ({"kind": "subagent", "parentSessionId": "s-0"}, False),
        ({"kind": "reviewer", "parentSessionId": "s-0"}, True),
        ({"kind": "root", "workspaceRoot": None}, False),
    ],
)
def test_a_row_is_listed_unless_it_is_a_subagents_own_session(
    members: dict[str, Any], shown: bool
) -> None:
    row = _row(**members)
    assert row.kind == members.get("kind")  # an unknown kind is kept as sent
    assert listed(row) is shown
