"""What newer hosts send unasked: status, usage, names, model changes, the session list and
view health; each only on versions whose bundle publishes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import Frame, SimPeer, labels, sim_served
from .validation import VERSIONS, bundle

pytestmark = pytest.mark.anyio


def publishes(version: str, method: str) -> bool:
    return method in bundle(version).CLIENT_NOTIFICATIONS


def serves(version: str, method: str) -> bool:
    return method in bundle(version).HOST_REQUESTS


def cursor_of(frames: list[Frame], method: str) -> str:
    cursor: str = next(f for f in frames if f.get("method") == method)["params"]["viewCursor"]
    return cursor


@pytest.mark.parametrize("version", VERSIONS)
async def test_status_and_usage_follow_each_turn_where_published(
    tmp_path: Path, version: str
) -> None:
    newer = publishes(version, "session/statusChanged")
    assert newer == publishes(version, "usage/changed") == serves(version, "usage/read")
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        before = await sim.request("usage/read")
        frames = await sim.turn(session_id, "hi", reasoningEffort="none")
        after = [await sim.next(), await sim.next()] if newer else []
        read, between = await sim.request("usage/read")
        second = await sim.turn(session_id, "again", reasoningEffort="none")
        later = [await sim.next(), await sim.next()] if newer else []
    if not newer:
        assert "session/statusChanged" not in labels(frames + second)
        assert before[0]["error"]["code"] == read["error"]["code"] == -32601
        assert between == []
        return
    assert before[0]["result"] == {}
    assert labels(frames)[:3] == ["turn/started", "session/statusChanged", "item/completed"]
    assert frames[1]["params"] == {
        "sessionId": session_id,
        "status": "running",
        "viewCursor": cursor_of(frames, "turn/started"),
    }
    assert labels(after) == ["session/statusChanged", "usage/changed"]
    assert after[0]["params"] == {
        "sessionId": session_id,
        "status": "idle",
        "viewCursor": frames[-1]["params"]["viewCursor"],
    }
    usage = after[1]["params"]
    assert list(usage) == ["window", "weekly", "tier", "observedAtMs"]
    assert usage["window"]["usedPercent"] == 1
    assert read["result"] == {"usage": usage}
    assert between == []
    assert later[1]["params"]["window"]["usedPercent"] == 2


@pytest.mark.parametrize("version", ["1.3.0", "1.4.2"])
async def test_queued_turns_keep_the_session_running(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "first", reasoningEffort="none")
        await sim.turn_start(session_id, "second", reasoningEffort="none")
        frames = await sim.until(
            lambda f: f.get("method") == "session/statusChanged" and f["params"]["status"] == "idle"
        )
    statuses = [f["params"]["status"] for f in frames if f.get("method") == "session/statusChanged"]
    assert statuses == ["running", "running", "idle"]
    assert labels(frames).count("turn/completed") == 2
    assert labels(frames).count("usage/changed") == 1  # after the first turn; one more follows


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_model_names_the_session_where_sessions_have_names(
    tmp_path: Path, version: str
) -> None:
    named = publishes(version, "session/nameChanged")
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(
            session_id, "sim:name Fix the Login bug!\nhello", reasoningEffort="none"
        )
        read = await sim.call("session/read", {"sessionId": session_id})
        page = await sim.call("view/page", {"sessionId": session_id, "limit": 100})
    changed = [f for f in frames if f.get("method") == "session/nameChanged"]
    if not named:
        assert changed == []
        assert "name" not in read["session"]
        assert "title" not in read["session"]
        return
    assert len(changed) == 1
    params = changed[0]["params"]
    assert list(params) == ["sessionId", "viewCursor", "sourceRange", "name"]
    assert (params["sessionId"], params["name"]) == (session_id, "fix-the-login-bug")
    assert "session/nameChanged" in [event["method"] for event in page["events"]]
    assert read["session"]["name"] == "fix-the-login-bug"
    assert read["session"]["title"] == "Fix the Login bug!"
    assert read["session"]["firstUserPrompt"] == "sim:name Fix the Login bug!\nhello"


@pytest.mark.parametrize("version", VERSIONS)
async def test_set_model_announces_the_new_model(tmp_path: Path, version: str) -> None:
    assert publishes(version, "session/modelChanged")
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        params = {
            "commandId": new_uuid7(),
            "sessionId": session_id,
            "model": {"modelId": "muse-spark-1.2"},
        }
        ack, before = await sim.request("session/setModel", params)
        changed = await sim.next()
    assert before == []
    assert ack["result"] == {"commandId": params["commandId"], "status": "accepted"}
    assert changed["method"] == "session/modelChanged"
    assert (changed["params"]["modelId"], changed["params"]["providerId"]) == (
        "muse-spark-1.2",
        "meta",
    )
    assert changed["params"]["source"] == "user"


@pytest.mark.parametrize("version", VERSIONS)
async def test_view_health_is_reported_where_published(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "sim:viewlost\nstill here", reasoningEffort="none")
    health = [f["params"] for f in frames if f.get("method") == "session/viewHealthChanged"]
    if not publishes(version, "session/viewHealthChanged"):
        assert health == []
    else:
        assert health == [
            {
                "sessionId": session_id,
                "health": "unavailable",
                "noneReason": "projectionUnavailable",
            }
        ]
    assert frames[-1]["params"]["terminal"] == "completed"


async def _list_changes(sim: SimPeer) -> dict[str, list[Frame]]:
    """Start, rename, name by the model and fork; what each sent after its answer."""
    seen: dict[str, list[Frame]] = {}
    session_id = new_uuid7()
    start = {"commandId": new_uuid7(), "sessionId": session_id, "workspaceRoot": "/w"}
    await sim.request("session/start", start)
    seen["start"] = (await sim.request("model/list"))[1]
    rename = {"commandId": new_uuid7(), "sessionId": session_id, "name": "renamed"}
    await sim.request("session/rename", rename)
    seen["rename"] = (await sim.request("model/list"))[1]
    seen["name"] = await sim.turn(session_id, "sim:name Model Name", reasoningEffort="none")
    seen["name"] += (await sim.request("model/list"))[1]
    await sim.request("session/fork", {"commandId": new_uuid7(), "sessionId": session_id})
    seen["fork"] = (await sim.request("model/list"))[1]
    return seen


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_session_list_streams_where_granted(tmp_path: Path, version: str) -> None:
    """1.4.2 grants ``sessionListStream`` unasked and sends ``session/listChanged`` rows when a
    session is created, renamed or named; no other version sends any, even when asked."""
    async with sim_served(tmp_path, version) as sim:
        result = await sim.initialize(requestedCapabilities=["sessionListStream"])
        seen = await _list_changes(sim)
    rows = {
        step: [f["params"]["session"] for f in frames if f.get("method") == "session/listChanged"]
        for step, frames in seen.items()
    }
    if "sessionListStream" not in result["grantedCapabilities"]:
        assert version != "1.4.2"
        assert rows == {"start": [], "rename": [], "name": [], "fork": []}
        return
    assert [len(found) for found in rows.values()] == [1, 1, 1, 1]
    assert rows["start"][0]["status"] == "idle"
    assert "approvalMode" not in rows["start"][0]
    assert rows["rename"][0]["name"] == "renamed"
    assert (rows["name"][0]["name"], rows["name"][0]["title"]) == ("model-name", "Model Name")
    assert rows["fork"][0]["forkedFrom"]["sessionId"] == rows["start"][0]["sessionId"]
