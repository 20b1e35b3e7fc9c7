"""Tool cards as the client sees them on every Muse version: true diffs, absolute paths, a
status that only moves forward, and rejected calls shown as rejected."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from .harness import WAIT, Agent, choose, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

RANKS: Final = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2}
WRITTEN: Final = "written by muse-sim\n"
"""What the simulated ``write_file`` writes (``sim:protected``)."""


def _card_views(agent: Agent, session: str) -> list[tuple[str, dict[str, Any]]]:
    """Every view of a tool call the agent sent for ``session``, in order: ``("card", update)``
    for ``tool_call``/``tool_call_update`` and ``("ask", toolCall)`` for permission requests."""
    views: list[tuple[str, dict[str, Any]]] = []
    for direction, message in agent.frames:
        params = message.get("params") or {}
        if direction != "in" or params.get("sessionId") != session:
            continue
        if message.get("method") == "session/update":
            update = params["update"]
            if update["sessionUpdate"] in ("tool_call", "tool_call_update"):
                views.append(("card", update))
        elif message.get("method") == "session/request_permission":
            views.append(("ask", params["toolCall"]))
    return views


def _of(views: list[tuple[str, dict[str, Any]]], call_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(kind, view) for kind, view in views if view["toolCallId"] == call_id]


def _texts(view: dict[str, Any]) -> list[str]:
    return [c["content"]["text"] for c in view.get("content") or [] if c["type"] == "content"]


@pytest.mark.parametrize("version", VERSIONS)
async def test_writes_and_edits_show_the_whole_file_before_and_after_and_each_names_its_tool(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    notes = world.workspace / "notes.txt"
    notes.write_text("alpha\nbeta\ngamma\n")
    path = str(notes)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            wrote = await agent.prompt(session, "sim:protected notes.txt")
            edited = await agent.prompt(session, "sim:edit notes.txt beta BETA")
            looked = await agent.prompt(session, "sim:bash 5000\nsim:search needle\nsim:web q")
    assert (wrote.stop_reason, edited.stop_reason, looked.stop_reason) == ("end_turn",) * 3
    write_ask, edit_ask = agent.client.permission_requests
    write_diff = {"type": "diff", "path": path, "oldText": "alpha\nbeta\ngamma\n"}
    edit_diff = {**write_diff, "newText": "alpha\nBETA\ngamma\n"}
    write_diff["newText"] = WRITTEN
    views = _card_views(agent, session)
    for ask, diff in ((write_ask, write_diff), (edit_ask, edit_diff)):
        shown = _of(views, ask.tool_call.tool_call_id)
        assert [kind for kind, _ in shown] == ["card", "ask", "card", "card"]
        for _, view in shown:
            assert view["content"][0] == diff, view
            assert view["locations"] == [{"path": path}]
        assert shown[-1][1]["status"] == "completed"
    # Every view of every card, the permission request's included, carries Muse's tool name.
    calls = [view["toolCallId"] for kind, view in views if view.get("sessionUpdate") == "tool_call"]
    names = [{view.get("name") for _, view in _of(views, call)} for call in calls]
    assert names == [{"write_file"}, {"edit_file"}, {"bash"}, {"search"}, {"web_search"}]
    assert len(views) > 2 * len(calls), "every card was updated at least once"
    assert "wrote 20 bytes to notes.txt" in _texts(
        _of(views, write_ask.tool_call.tool_call_id)[-1][1]
    )


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_status_never_goes_back_and_a_rejected_call_shows_as_rejected(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            approved = await agent.prompt(session, "sim:stages 2 make build && make test")
            agent.client.policy = choose("reject_once")
            rejected = await agent.prompt(session, "sim:approve rm -rf build")
    assert (approved.stop_reason, rejected.stop_reason) == ("end_turn", "end_turn")
    views = _card_views(agent, session)
    first, _, last = agent.client.permission_requests
    statuses = [
        view["status"] for _, view in _of(views, first.tool_call.tool_call_id) if "status" in view
    ]
    assert statuses[0] == "in_progress"
    assert statuses[-1] == "completed"
    assert [RANKS[s] for s in statuses] == sorted(RANKS[s] for s in statuses), statuses
    shown = _of(views, last.tool_call.tool_call_id)
    assert "status" not in shown[1][1], "the running card is not sent back to pending"
    _, end = shown[-1]
    assert (end["status"], end["title"]) == (
        "failed",
        "Rejected: Run a command that needs approval",
    )
    assert _texts(end) == ["[Rejected: the user did not allow this tool call.]"]
