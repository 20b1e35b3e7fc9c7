"""Compactions and plans below the wire: how each compaction item's state reads (the outcomes
muse-sim never plays: failed, cancelled, nothing to compact), which turns' answers are Plan
mode's plan, and what the outlet lets each client see (``sessions.outlet`` decides alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

from muse_acp.agent.context import AgentContext
from muse_acp.agent.sessions.outlet import UpdateOutlet
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.compactions import compaction_updates, nothing_to_compact
from muse_acp.agent.translation.plans import PLANNING_PREAMBLE, markdown_plan
from muse_acp.agent.translation.translate import TurnTranslator
from muse_acp.config import AdapterConfig
from muse_acp_wire import acp, msp

from .fakes import RecordingClient

pytestmark = pytest.mark.anyio

SESSION: Final = "session-1"
ENVELOPE: Final = {"sessionId": SESSION, "viewCursor": "v:1"}


def _compaction(status: str, **members: Any) -> msp.CompactionItem:
    item = {"itemId": "c-1", "kind": "compaction", "turnId": None, "revision": 2}
    return msp.CompactionItem.model_validate({**item, "status": status, **members})


def _dumped(updates: list[Any]) -> list[dict[str, Any]]:
    return [u.model_dump(mode="json", by_alias=True, exclude_unset=True) for u in updates]


def test_a_failed_compaction_says_why_and_sends_no_summary() -> None:
    failed = _compaction("failed", outcome="failed", reason="summarizer_failed")
    assert _dumped(compaction_updates(failed)) == [
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "c-1",
            "status": "failed",
            "error": "Compaction failed: summarizer_failed",
        }
    ]


def test_a_cancelled_compaction_is_cancelled_and_one_with_nothing_to_do_completes() -> None:
    cancelled = _compaction("cancelled", outcome="cancelled")
    assert [u.status for u in compaction_updates(cancelled)] == ["cancelled"]  # type: ignore[union-attr]
    noop = _compaction("completed", outcome="noop", reason="no_compactable_history")
    assert _dumped(compaction_updates(noop)) == _dumped(
        nothing_to_compact("c-1", "Muse says there is no history to compact yet")
    )
    assert _dumped(compaction_updates(noop))[0]["content"]["text"] == (
        "Nothing was compacted: Muse says there is no history to compact yet."
    )


def _event(item: dict[str, Any]) -> msp.ItemEventParams:
    return msp.ItemEventParams.model_validate({**ENVELOPE, "item": item})


def _user(turn: str, text: str, **members: Any) -> msp.ItemEventParams:
    item = {"itemId": f"u-{turn}", "kind": "userMessage", "turnId": turn, "revision": 1}
    return _event({**item, "status": "completed", "text": text, **members})


def _answer(turn: str, text: str) -> msp.ItemEventParams:
    item = {"itemId": f"a-{turn}", "kind": "agentMessage", "turnId": turn, "revision": 2}
    return _event({**item, "status": "completed", "text": text})


def _plans(translator: TurnTranslator, *events: msp.ItemEventParams) -> list[str]:
    return [
        update.plan.content
        for event in events
        for update in translator.on_notification("item/completed", event)
        if isinstance(update, acp.PlanUpdateSessionUpdate)
        and isinstance(update.plan, acp.MarkdownPlanUpdateContent)
    ]


def test_only_plan_mode_turns_answer_with_a_markdown_plan() -> None:
    live = TurnTranslator(session_id=SESSION, turn_id="t-1", plan_mode=True)
    assert _plans(live, _answer("t-1", "1. Read\n2. Change")) == ["1. Read\n2. Change"]
    assert _plans(TurnTranslator(session_id=SESSION, turn_id="t-1"), _answer("t-1", "Hi")) == []
    history = TurnTranslator(session_id=SESSION, replay=True)
    assert _plans(
        history,
        _user("t-1", f"{PLANNING_PREAMBLE}\nplan it"),
        _user("t-1", "also the tests", steered=True),  # a correction keeps the turn's mode
        _answer("t-1", "1. Plan"),
        _user("t-2", "go ahead"),
        _answer("t-2", "Done."),
    ) == ["1. Plan"]


def _outlet(tmp_path: Path, client: RecordingClient, **shows: bool) -> UpdateOutlet:
    ctx = AgentContext(AdapterConfig(data_dir=tmp_path))
    session = AcpSession(SESSION, str(tmp_path), client, ctx.hosting)
    return UpdateOutlet(SESSION, client, session, **shows)


TODOS: Final = acp.PlanSessionUpdate(
    session_update="plan",
    entries=[acp.PlanEntry(content="a", priority="medium", status="pending")],
)
EMPTIED: Final = acp.PlanSessionUpdate(session_update="plan", entries=[])


async def test_a_client_with_plan_operations_gets_the_todo_list_by_plan_id(
    tmp_path: Path,
) -> None:
    client = RecordingClient()
    outlet = _outlet(tmp_path, client, plans=True)
    for update in (TODOS, EMPTIED, markdown_plan("# Plan")):
        await outlet.send(update)
    assert _dumped(client.updates()) == [
        {
            "sessionUpdate": "plan_update",
            "plan": {
                "type": "items",
                "planId": "muse-todo-list",
                "entries": [{"content": "a", "priority": "medium", "status": "pending"}],
            },
        },
        {"sessionUpdate": "plan_removed", "planId": "muse-todo-list"},
        {
            "sessionUpdate": "plan_update",
            "plan": {"type": "markdown", "planId": "muse-plan-mode", "content": "# Plan"},
        },
    ]


async def test_any_other_client_gets_the_legacy_plan_and_no_compaction(tmp_path: Path) -> None:
    client = RecordingClient()
    outlet = _outlet(tmp_path, client)
    for update in (
        TODOS,
        EMPTIED,
        markdown_plan("# Plan"),
        *compaction_updates(_compaction("completed", outcome="compacted")),
    ):
        await outlet.send(update)
    await outlet.show_compaction(nothing_to_compact("c-2", "why"), None)
    await outlet.show_compaction(nothing_to_compact("c-3", "why"), "Nothing was compacted.")
    assert _dumped(client.updates()) == [
        _dumped([TODOS])[0],
        _dumped([EMPTIED])[0],
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Nothing was compacted."},
        },
    ]
