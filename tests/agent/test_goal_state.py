"""The session goal as the client sees it: ``session/goalChanged`` in, ``session_info_update``
with ``_meta["muse/goal"]`` out, and how ``/goal`` words it; ``/mcp``'s listing."""

from __future__ import annotations

from typing import Any

from muse_acp.agent.commands.mcp_listing import mcp_text
from muse_acp.agent.mcp.mcp_servers import McpServerSpec
from muse_acp.agent.translation.goal_state import announced_goal, goal_text, goal_update
from muse_acp.agent.translation.translate import TurnTranslator
from muse_acp_wire import acp, msp

ENVELOPE = {"sessionId": "host-sess", "viewCursor": "v:host-sess:4"}


def _changed(goal: dict[str, Any] | None) -> list[acp.SessionUpdate]:
    params = msp.SessionGoalChangedParams.model_validate({**ENVELOPE, "goal": goal})
    return TurnTranslator(session_id="s").on_notification("session/goalChanged", params)


def _wire(update: acp.SessionUpdate) -> dict[str, Any]:
    dumped = update.model_dump(mode="json", by_alias=True, exclude_unset=True)
    acp.SessionNotification.model_validate({"sessionId": "s", "update": dumped})
    return dumped


def test_a_goal_change_during_a_turn_becomes_a_session_info_update() -> None:
    goal = {"objective": "Green the suite", "status": "active", "percentComplete": 40}
    (update,) = _changed({**goal, "currentWork": "fixing parser"})
    wire = _wire(update)
    assert wire["sessionUpdate"] == "session_info_update"
    assert wire["_meta"] == {"muse/goal": {"goal": {**goal, "currentWork": "fixing parser"}}}
    acp.MuseSessionInfoMeta.model_validate(wire["_meta"])
    seen = announced_goal(update)
    assert seen is not None
    assert seen.goal is not None
    assert seen.goal.objective == "Green the suite"


def test_a_cleared_goal_is_announced_as_null() -> None:
    (update,) = _changed(None)
    assert _wire(update)["_meta"] == {"muse/goal": {"goal": None}}
    seen = announced_goal(update)
    assert seen is not None
    assert seen.goal is None


def test_other_updates_announce_no_goal() -> None:
    title = acp.SessionInfoUpdateSessionUpdate(session_update="session_info_update", title="x")
    assert announced_goal(title) is None


def test_goal_text_shows_what_muse_reported() -> None:
    update = goal_update(
        msp.Goal(objective="Ship", status="paused", percent_complete=120, next_work="docs")
    )
    seen = announced_goal(update)
    assert seen is not None
    assert goal_text(seen.goal) == "Goal: Ship\nStatus: paused\nProgress: 120%\nNext: docs"
    assert goal_text(None) == "This session has no goal."


def test_mcp_listing_names_servers_and_transports_but_never_secrets() -> None:
    servers = (
        McpServerSpec("files", "stdio", "/opt/bin/files", ("--key", "s3cret"), (("K", "s3cret"),)),
        McpServerSpec(
            "docs",
            "http",
            url="https://user:s3cret@example.com/mcp?token=s3cret",
            headers=(("Authorization", "Bearer s3cret"), ("X-Team", "a")),
        ),
    )
    text = mcp_text(servers)
    assert "- 'files': stdio; 1 environment variable (values hidden)" in text
    assert "- 'docs': http; 2 headers (values hidden)" in text
    assert "s3cret" not in text
    assert "example.com" not in text
    assert "/opt/bin/files" not in text
    assert "no MCP servers" in mcp_text(())
