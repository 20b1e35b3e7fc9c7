"""muse-sim's native subagent (``sim:subagent``, ``sim:subagent-fails``): its item starts
``accepted``, runs with a child session of its own and ends with a result summary, or failed
with the result's ``errorKind``, as Muse's official transcripts show. From 1.4.4 the child
session of ``sim:subagent-approve`` is listed (and streamed) as a ``subagent`` row."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from .harness import item_of
from .runs import sim_hosted
from .validation import VERSIONS

pytestmark = pytest.mark.anyio

KINDS: Final = ("1.4.4", "1.4.13")
"""Versions whose session rows say their kind (Muse's own 1.4.4 declarations on)."""


@pytest.mark.parametrize(
    ("directive", "status"), [("subagent", "completed"), ("subagent-fails", "failed")]
)
async def test_a_subagent_runs_in_a_child_session_and_reports_its_result(
    tmp_path: Path, directive: str, status: str
) -> None:
    async with sim_hosted(tmp_path, version="1.1.1") as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, f"sim:{directive} survey the tests")
        events = ("item/started", "item/updated", "item/completed")
        items = [item_of(f) for f in frames if f.get("method") in events]
        subagent = [i for i in items if i["kind"] == "subagent"]
    assert [i["controlStatus"] for i in subagent] == ["accepted", "running", "closed"]
    assert "childSessionId" not in subagent[0] or subagent[0]["childSessionId"] is None
    assert subagent[1]["childSessionId"] == subagent[2]["childSessionId"] != session_id
    assert subagent[-1]["status"] == status
    assert subagent[-1]["objective"] == "survey the tests"
    result = subagent[-1]["result"]
    assert ("errorKind" in result) == (status == "failed")


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_subagents_session_is_listed_as_one_from_1_4_4(
    tmp_path: Path, version: str
) -> None:
    async with sim_hosted(tmp_path, version=version) as sim:
        await sim.initialize(sessionListStream=True)
        session_id = await sim.start(approvalMode="allowAll")
        frames = await sim.turn(session_id, "sim:subagent-approve make lint")
        [child] = {
            item_of(f)["childSessionId"]
            for f in frames
            if f.get("method") == "item/completed" and item_of(f)["kind"] == "subagent"
        }
        listed = await sim.call("session/list", {})
    streamed = [
        f["params"]["session"]
        for f in frames
        if f.get("method") == "session/listChanged" and f["params"]["session"]["sessionId"] == child
    ]
    rows = {row["sessionId"]: row for row in listed["sessions"]}
    if version in KINDS:
        assert set(rows) == {session_id, child}
        assert rows[session_id]["kind"] == "root"
        assert (rows[child]["kind"], rows[child]["parentSessionId"]) == ("subagent", session_id)
        assert [(s["sessionId"], s["kind"], s["parentSessionId"]) for s in streamed] == [
            (child, "subagent", session_id)
        ]
    else:  # no declared member says whose subagent a session is: left out, no kind said
        assert set(rows) == {session_id}
        assert "kind" not in rows[session_id]
        assert streamed == []
