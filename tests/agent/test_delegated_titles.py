"""Workflow and subagent cards are titled from their own words."""

from __future__ import annotations

from typing import Any

import pytest

from muse_acp.agent.cards.delegated_titles import delegated_title
from muse_acp_wire import msp

BASE: dict[str, Any] = {"itemId": "i-1", "turnId": "t-1", "revision": 1, "status": "inProgress"}


def _workflow(**members: Any) -> msp.WorkflowItem:
    fields = {**BASE, "kind": "workflow", "workflowRunId": "run-1", "children": [], **members}
    return msp.WorkflowItem.model_validate(fields)


def _subagent(**members: Any) -> msp.SubagentItem:
    fields = {
        **BASE,
        "kind": "subagent",
        "subagentId": "s-1",
        "agentPath": "root/scout",
        "depth": 1,
        "objective": "",
        **members,
    }
    return msp.SubagentItem.model_validate(fields)


@pytest.mark.parametrize(
    ("item", "title"),
    [
        (_subagent(objective="Find the flaky test\nthen report"), "Subagent: Find the flaky test"),
        (_subagent(objective="  ", role="reviewer"), "Subagent: reviewer"),
        (_subagent(), "Subagent: root/scout"),
        (_workflow(message="Migrate   the schema"), "Workflow: Migrate the schema"),
        (
            _workflow(children=[{"childId": "c", "attempt": 1, "status": "running", "label": "L"}]),
            "Workflow: L",
        ),
        (_workflow(scriptId="release-check"), "Workflow: release-check"),
        (_workflow(), None),
    ],
)
def test_delegated_work_is_titled_by_its_own_words(item: Any, title: str | None) -> None:
    assert delegated_title(item) == title


def test_other_items_have_no_delegated_title() -> None:
    item = msp.ToolCallItem.model_validate(
        {**BASE, "kind": "toolCall", "tool": "bash", "callId": "c", "args": "{}"}
    )
    assert delegated_title(item) is None
