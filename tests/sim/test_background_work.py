"""muse-sim's work that outlives its turn, the commands that stop it, and the stray request."""

from __future__ import annotations

from pathlib import Path

import pytest

from muse_acp.sim.options.faults import FaultSyntaxError, parse_faults
from muse_acp.sim.state.ids import new_uuid7

from .harness import item_of
from .runs import sim_hosted

pytestmark = pytest.mark.anyio


async def test_a_workflow_reports_after_its_turn_and_stops_on_workflow_cancel(
    tmp_path: Path,
) -> None:
    async with sim_hosted(tmp_path, version="1.3.0") as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "sim:workflow Check the links")
        [started] = [
            f
            for f in frames
            if f.get("method") == "item/started" and item_of(f)["kind"] == "workflow"
        ]
        workflow = item_of(started)
        assert (workflow["message"], workflow["stopAvailable"]) == ("Check the links", True)
        progress = await sim.until_method("item/updated")
        assert item_of(progress[-1])["children"][0]["phase"] == "working"
        params = {
            "commandId": new_uuid7(),
            "sessionId": session_id,
            "workflowRunId": workflow["workflowRunId"],
        }
        assert (await sim.call("workflow/cancel", params))["status"] == "accepted"
        ended = await sim.until_method("item/completed")
        assert item_of(ended[-1])["status"] == "cancelled"
        again = {**params, "commandId": new_uuid7()}
        assert (await sim.call("workflow/cancel", again))["status"] == "noop"
        unknown = {**params, "commandId": new_uuid7(), "workflowRunId": "nope"}
        assert (await sim.error("workflow/cancel", unknown))["data"]["kind"] == "invalidParams"


async def test_a_background_task_stops_on_task_stop(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, version="1.4.2") as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "sim:background make watch")
        [sent] = [
            f for f in frames if f.get("method") == "item/updated" and item_of(f).get("background")
        ]
        task_id = item_of(sent)["itemId"]
        params = {"commandId": new_uuid7(), "sessionId": session_id, "taskId": task_id}
        result = await sim.call("task/stop", params)
        assert (result["status"], result["taskId"]) == ("accepted", task_id)
        ended = await sim.until(
            lambda f: f.get("method") == "item/completed" and item_of(f)["itemId"] == task_id
        )
        assert item_of(ended[-1])["status"] == "cancelled"


async def test_older_hosts_complete_a_workflow_themselves(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, version="1.2.1") as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn(session_id, "sim:workflow Check the links")
        ended = await sim.until_method("item/completed")
        assert (item_of(ended[-1])["kind"], item_of(ended[-1])["status"]) == (
            "workflow",
            "completed",
        )
        error = await sim.error(
            "workflow/cancel",
            {"commandId": new_uuid7(), "sessionId": session_id, "workflowRunId": "x"},
        )
        assert error["data"]["kind"] == "methodNotFound"


def test_the_stray_request_fault_names_a_method() -> None:
    assert parse_faults("stray-request:tool/consent").stray_request == "tool/consent"
    with pytest.raises(FaultSyntaxError):
        parse_faults("stray-request:consent")


async def test_a_stray_request_is_sent_mid_turn_and_the_turn_waits(tmp_path: Path) -> None:
    env = {"MUSE_SIM_FAULTS": "stray-request:tool/consent"}
    async with sim_hosted(tmp_path, env=env) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "hello")
        frames = await sim.until_method("tool/consent")
        assert frames[-1]["params"]["sessionId"] == session_id
        assert "id" in frames[-1]
        assert not [f for f in frames if f.get("method") == "turn/completed"]
