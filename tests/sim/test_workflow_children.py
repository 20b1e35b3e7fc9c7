"""muse-sim's workflow with two children (``sim:workflow-children``): the second fails once the
turn ended; ``workflow/childControl`` retries it (a second attempt that completes) or skips a
child, refuses a stale attempt, and the run completes once every child ended. Older hosts end
the run ``failed`` themselves and do not serve the control."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import item_of
from .runs import sim_hosted

pytestmark = pytest.mark.anyio


def _children(frame: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {child["childId"]: child for child in item_of(frame)["children"]}


async def test_a_failed_child_is_retried_and_a_running_one_skipped(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, version="1.4.2") as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "sim:workflow-children Sort the inbox")
        [started] = [
            f
            for f in frames
            if f.get("method") == "item/started" and item_of(f)["kind"] == "workflow"
        ]
        run_id = item_of(started)["workflowRunId"]
        failed = await sim.until_method("item/updated")
        second = _children(failed[-1])["child-2"]
        assert (second["status"], second["failureKind"], second["attempt"]) == (
            "failed",
            "tool_error",
            1,
        )
        assert _children(failed[-1])["child-1"]["status"] == "running"

        def control(child: str, attempt: int, action: str) -> dict[str, Any]:
            return {
                "commandId": new_uuid7(),
                "sessionId": session_id,
                "workflowRunId": run_id,
                "childId": child,
                "attempt": attempt,
                "action": action,
            }

        stale = await sim.error("workflow/childControl", control("child-2", 5, "retry"))
        assert stale["data"]["reason"] == "stale_attempt"
        retried = await sim.call("workflow/childControl", control("child-2", 1, "retry"))
        assert retried["status"] == "accepted"
        redone = await sim.until(
            lambda f: (
                f.get("method") == "item/updated"
                and _children(f)["child-2"]["status"] == "completed"
            )
        )
        assert _children(redone[-1])["child-2"]["attempt"] == 2
        skipped = await sim.call("workflow/childControl", control("child-1", 1, "skip"))
        assert skipped["status"] == "accepted"
        ended = await sim.until_method("item/completed")
        assert item_of(ended[-1])["status"] == "completed"
        assert _children(ended[-1])["child-1"]["status"] == "cancelled"
        again = await sim.call("workflow/childControl", control("child-1", 1, "skip"))
        assert again["status"] == "noop"


async def test_older_hosts_end_the_run_failed_themselves(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, version="1.2.1") as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn(session_id, "sim:workflow-children Sort the inbox")
        ended = await sim.until_method("item/completed")
        assert item_of(ended[-1])["status"] == "failed"
        assert _children(ended[-1])["child-2"]["failureKind"] == "tool_error"
        error = await sim.error(
            "workflow/childControl",
            {
                "commandId": new_uuid7(),
                "sessionId": session_id,
                "workflowRunId": "x",
                "childId": "child-1",
                "attempt": 1,
                "action": "skip",
            },
        )
        assert error["data"]["kind"] == "methodNotFound"
