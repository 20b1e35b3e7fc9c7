"""muse-sim's ``subagent/stop``, ``workflow/pause`` and ``workflow/resume``: served only by the
versions whose bundle declares them (elsewhere -32601), a held subagent stopping alone while its
turn goes on, a paused workflow resumed by a turn Muse starts itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import item_of
from .runs import sim_hosted

pytestmark = pytest.mark.anyio

STOP_AND_PAUSE = ("1.4.4", "1.4.13")
STOP = ("1.3.0", "1.4.2", *STOP_AND_PAUSE)
"""Muse's own 1.3.0 declarations already have ``subagent/stop``; ``workflow/pause`` is 1.4.4's."""
RESUME = ("1.4.13",)


def _ids(session_id: str, **more: Any) -> dict[str, Any]:
    return {"commandId": new_uuid7(), "sessionId": session_id, **more}


@pytest.mark.parametrize("version", ["1.2.1", *STOP])
async def test_a_held_subagent_stops_alone_where_the_bundle_declares_subagent_stop(
    tmp_path: Path, version: str
) -> None:
    async with sim_hosted(tmp_path, version=version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "sim:subagent-hold survey\nafter the subagent")
        running = await sim.until(
            lambda f: f.get("method") == "item/updated" and item_of(f)["kind"] == "subagent"
        )
        subagent_id = item_of(running[-1])["subagentId"]
        params = _ids(session_id, subagentId=subagent_id, reason="no longer needed")
        if version not in STOP:
            assert (await sim.error("subagent/stop", params))["code"] == -32601
            await sim.call("turn/cancel", _ids(session_id, turnId=item_of(running[-1])["turnId"]))
            ended = await sim.until_method("turn/completed")
            assert ended[-1]["params"]["terminal"] == "cancelled"
            return
        assert (await sim.call("subagent/stop", params))["status"] == "accepted"
        frames = await sim.until_method("turn/completed")
        [done] = [f for f in frames if f.get("method") == "item/completed"][:1]
        assert (item_of(done)["status"], item_of(done)["result"]["summary"]) == (
            "cancelled",
            "stopped by its owner: survey",
        )
        assert frames[-1]["params"]["terminal"] == "completed"
        again = _ids(session_id, subagentId=subagent_id)
        assert (await sim.call("subagent/stop", again))["status"] == "noop"


@pytest.mark.parametrize("version", ["1.4.2", *STOP_AND_PAUSE])
async def test_a_workflow_pauses_and_resumes_where_the_bundle_declares_it(
    tmp_path: Path, version: str
) -> None:
    async with sim_hosted(tmp_path, version=version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "sim:workflow-children Triage")
        [started] = [
            f
            for f in frames
            if f.get("method") == "item/started" and item_of(f)["kind"] == "workflow"
        ]
        run = _ids(session_id, workflowRunId=item_of(started)["workflowRunId"])
        if version not in STOP_AND_PAUSE:
            assert (await sim.error("workflow/pause", run))["code"] == -32601
        else:
            assert (await sim.call("workflow/pause", run))["status"] == "accepted"
        resume = {**run, "commandId": new_uuid7()}
        if version not in RESUME:
            assert (await sim.error("workflow/resume", resume))["code"] == -32601
            return
        answer = await sim.call("workflow/resume", resume)
        woken = await sim.until_method("turn/started")
        assert answer["turnId"] == woken[-1]["params"]["turnId"]
        await sim.until_method("turn/completed")
        again = {**run, "commandId": new_uuid7()}
        assert (await sim.error("workflow/resume", again))["data"]["kind"] == "invalidParams"
