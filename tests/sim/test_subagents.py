"""muse-sim's native subagent (``sim:subagent``, ``sim:subagent-fails``): its item starts
``accepted``, runs with a child session of its own and ends with a result summary, or failed
with the result's ``errorKind``, as Muse's official transcripts show."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import item_of
from .runs import sim_hosted

pytestmark = pytest.mark.anyio


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
