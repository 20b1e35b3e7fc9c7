"""``session/delete``: only on versions that have it (their bundle declares it and, played on
an older bundle, they do not withdraw it: 1.4.4), experimental, refused while
another host holds the session, reported by ``session/deleteCompleted``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.options.versions import HOST_VERSIONS
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.profile import load_profile

from .harness import labels, sim_served
from .validation import VERSIONS

pytestmark = pytest.mark.anyio


def delete(session_id: str) -> dict[str, Any]:
    return {"commandId": new_uuid7(), "sessionId": session_id}


@pytest.mark.parametrize(
    "version",
    [v for v in VERSIONS if not load_profile(HOST_VERSIONS[v]).serves("session/delete")],
)
async def test_older_hosts_do_not_know_session_delete(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize(experimentalApi=True)
        session_id = await sim.start()
        error = await sim.error("session/delete", delete(session_id))
        read = await sim.call("session/read", {"sessionId": session_id})
    assert error["code"] == -32601
    assert error["data"]["kind"] == "methodNotFound"
    assert read["session"]["sessionId"] == session_id


async def test_session_delete_is_experimental(tmp_path: Path) -> None:
    async with sim_served(tmp_path, "1.4.2") as sim:
        await sim.initialize()
        session_id = await sim.start()
        error = await sim.error("session/delete", delete(session_id))
        read = await sim.call("session/read", {"sessionId": session_id})
    assert error["code"] == -32601
    assert error["data"] == {"kind": "experimentalRequired", "descriptor": "session/delete"}
    assert read["session"]["status"] == "idle"


async def test_deleting_a_session_removes_its_durable_state(tmp_path: Path) -> None:
    async with sim_served(tmp_path, "1.4.2") as sim:
        await sim.initialize(experimentalApi=True)
        session_id = await sim.start()
        await sim.turn(session_id, "hello", reasoningEffort="none")
        params = delete(session_id)
        ack, before = await sim.request("session/delete", params)
        after = await sim.until_method("session/listChanged")
        read = await sim.error("session/read", {"sessionId": session_id})
        listed = await sim.call("session/list", {})
        again = await sim.error("session/delete", delete(session_id))
        unknown = await sim.error("session/delete", delete(new_uuid7()))
    assert ack["result"] == {"commandId": params["commandId"], "status": "accepted"}
    assert "session/deleteCompleted" not in labels(before)
    assert labels(after)[-2:] == ["session/deleteCompleted", "session/listChanged"]
    assert after[-2]["params"] == {
        "sessionId": session_id,
        "commandId": params["commandId"],
        "outcome": "completed",
    }
    row = after[-1]["params"]["session"]
    assert (row["sessionId"], row["status"]) == (session_id, "notLoaded")
    assert read["code"] == -32020
    assert listed["sessions"] == []
    assert not (tmp_path / "sessions" / session_id).exists()
    assert again["code"] == unknown["code"] == -32020


async def test_a_session_another_host_holds_is_not_deleted(tmp_path: Path) -> None:
    async with sim_served(tmp_path, "1.4.2") as holder, sim_served(tmp_path, "1.4.2") as other:
        await holder.initialize()
        await other.initialize(experimentalApi=True)
        session_id = await holder.start()
        refused, before = await other.request("session/delete", delete(session_id))
        read = await other.call("session/read", {"sessionId": session_id})
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {
        "kind": "sessionInUse",
        "retryable": False,
        "sessionId": session_id,
    }
    assert before == []
    assert read["session"]["status"] == "notLoaded"


async def test_a_stored_session_no_host_holds_is_deleted(tmp_path: Path) -> None:
    async with sim_served(tmp_path, "1.4.2") as first:
        await first.initialize()
        session_id = await first.start()
    async with sim_served(tmp_path, "1.4.2") as second:
        await second.initialize(experimentalApi=True)
        await second.call("session/delete", delete(session_id))
        done = await second.until_method("session/deleteCompleted")
    assert done[-1]["params"]["outcome"] == "completed"
    assert not (tmp_path / "sessions" / session_id).exists()


async def test_a_session_with_a_turn_running_is_not_deleted(tmp_path: Path) -> None:
    async with sim_served(tmp_path, "1.4.2") as sim:
        await sim.initialize(experimentalApi=True)
        session_id = await sim.start()
        request_id, _ = await sim.turn_start(session_id, "sim:hold", reasoningEffort="none")
        await sim.until(lambda frame: frame.get("id") == request_id)
        params = delete(session_id)
        await sim.call("session/delete", params)
        done = await sim.next()
        read = await sim.call("session/read", {"sessionId": session_id})
    assert done["method"] == "session/deleteCompleted"
    assert done["params"] == {
        "sessionId": session_id,
        "commandId": params["commandId"],
        "outcome": "failed",
        "reason": "writerBusy",
        "physicalChange": "none",
    }
    assert read["session"]["status"] == "running"
