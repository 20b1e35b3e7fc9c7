"""Session commands and reads: start, list, read, fork and the session settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from muse_acp.sim.state.ids import new_uuid7
from muse_acp_wire import msp_1_2_1

from .harness import labels
from .runs import SimRun, sim_hosted

pytestmark = pytest.mark.anyio

SESSION_MEMBERS = [
    "sessionId",
    "path",
    "status",
    "activeTurnId",
    "createdAt",
    "updatedAt",
    "workspaceRoot",
    "providerId",
    "modelId",
    "turnCount",
    "forkedFrom",
    "approvalMode",
]


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1"])
async def test_sessions_start_announced_and_rename_only_on_1_2_1(
    tmp_path: Path, version: str
) -> None:
    """``session/started`` precedes the start result; 1.2.1 announces an explicit mode, and
    only 1.2.1 renames sessions (to slugs) and reads stored output."""
    async with sim_hosted(tmp_path, version=version) as sim:
        await sim.initialize()
        session_id = new_uuid7()
        command_id = new_uuid7()
        params = {"commandId": command_id, "sessionId": session_id, "workspaceRoot": "/p/q"}
        response, before = await sim.request("session/start", params)
        explicit, _ = await sim.request(
            "session/start",
            {"commandId": new_uuid7(), "sessionId": new_uuid7(), "approvalMode": "promptUnmatched"},
        )
        _, announced = await sim.request("model/list")  # collects what followed the result
        conflict = await sim.error("session/start", {**params, "commandId": new_uuid7()})
        bad_id = await sim.error(
            "session/start", {"commandId": new_uuid7(), "sessionId": "not-a-uuid"}
        )
        await _rename(sim, session_id, version)
    assert labels(before) == ["session/started"]
    result = response["result"]
    assert before[0]["params"] == {"session": result["session"]}
    assert list(before[0]) == ["jsonrpc", "method", "params", "emittedAtMs"]
    assert list(result) == ["session", "viewCursor"]
    assert result["viewCursor"] == ""
    session = result["session"]
    assert list(session) == SESSION_MEMBERS
    assert session["sessionId"] == session_id
    assert (session["status"], session["activeTurnId"], session["turnCount"]) == ("idle", None, 0)
    assert session["path"] == str(tmp_path / "sessions" / session_id / "events.jsonl")
    assert (session["providerId"], session["modelId"]) == ("meta", "muse-spark-1.3-contributor")
    assert session["approvalMode"] == {
        "mode": "promptUnmatched",
        "source": "startup",
        "lastCommandId": None,
    }
    expected = (
        "v:" + explicit["result"]["session"]["sessionId"] + ":1" if version == "1.2.1" else ""
    )
    assert explicit["result"]["viewCursor"] == expected
    if version == "1.2.1":
        assert labels(announced) == ["session/approvalModeChanged"]
        assert announced[0]["params"]["viewCursor"] == expected
    else:
        assert announced == []
    assert conflict["code"] == -32030
    assert conflict["data"]["reason"] == "session_id_conflict"
    assert bad_id["code"] == -32602


async def _settings(sim: SimRun) -> None:
    session_id = await sim.start()
    model_ack, before_model = await sim.request(
        "session/setModel",
        {
            "commandId": new_uuid7(),
            "sessionId": session_id,
            "model": {"modelId": "muse-spark-1.2"},
        },
    )
    model_changed = await sim.next()
    unroutable = await sim.error(
        "session/setModel",
        {"commandId": new_uuid7(), "sessionId": session_id, "model": {"modelId": "gpt-9"}},
    )
    mode_params = {"commandId": new_uuid7(), "sessionId": session_id, "mode": "onRequest"}
    mode, before_mode = await sim.request("session/setApprovalMode", mode_params)
    same = await sim.call("session/setApprovalMode", {**mode_params, "commandId": new_uuid7()})
    effort = await sim.call(
        "session/setReasoningEffort",
        {"commandId": new_uuid7(), "sessionId": session_id, "reasoningEffort": "high"},
    )
    effort_changed = await sim.next()
    models = await sim.call("model/list", {"sessionId": session_id})
    read = await sim.call("session/read", {"sessionId": session_id})
    assert before_model == []
    assert model_ack["result"] == {
        "commandId": model_ack["result"]["commandId"],
        "status": "accepted",
    }
    assert model_changed["method"] == "session/modelChanged"
    assert list(model_changed["params"]) == [
        "sessionId",
        "viewCursor",
        "sourceRange",
        "modelId",
        "providerId",
        "source",
    ]
    assert model_changed["params"]["modelId"] == "muse-spark-1.2"
    assert unroutable["data"]["reason"] == "unsupported_route"
    assert labels(before_mode) == ["session/approvalModeChanged"]
    changed = before_mode[0]["params"]
    assert (changed["mode"], changed["source"], changed["clientName"]) == (
        "onRequest",
        "approvalReconfigure",
        "sim_tests",
    )
    assert mode["result"]["applyOutcome"] == "completed"
    assert mode["result"]["effectiveMode"] == {
        "mode": "onRequest",
        "source": "approvalReconfigure",
        "lastCommandId": mode_params["commandId"],
    }
    assert same["applyOutcome"] == "noop"
    assert effort["status"] == "accepted"
    assert effort_changed["method"] == "session/reasoningEffortChanged"
    assert [m["modelId"] for m in models["models"] if m["isActive"]] == ["muse-spark-1.2"]
    assert [m["modelId"] for m in models["models"] if m["isDefault"]] == [
        "muse-spark-1.3-contributor"
    ]
    msp_1_2_1.ModelListResult.model_validate(models, by_alias=True, by_name=False)
    assert read["session"]["modelId"] == "muse-spark-1.2"
    assert read["session"]["approvalMode"]["mode"] == "onRequest"


async def _rename(sim: SimRun, session_id: str, version: str) -> None:
    rename = {"commandId": new_uuid7(), "sessionId": session_id, "name": "my session"}
    spaced = await sim.error("session/rename", rename)
    if version == "1.1.1":
        assert spaced["code"] == -32601
        output = {"sessionId": session_id, "itemId": "x", "outputRef": "y"}
        assert (await sim.error("item/readOutput", output))["code"] == -32601
        return
    renamed = await sim.call(
        "session/rename", {**rename, "commandId": new_uuid7(), "name": "fix-42"}
    )
    changed = await sim.next()
    read = await sim.call("session/read", {"sessionId": session_id})
    assert spaced["code"] == -32602
    assert spaced["data"]["kind"] == "invalidParams"
    assert renamed["name"] == "fix-42"
    assert changed["method"] == "session/nameChanged"
    assert changed["params"]["name"] == "fix-42"
    assert read["session"]["name"] == "fix-42"


async def _listing(sim: SimRun) -> None:
    created = [await sim.start(workspace="/ws/a" if i % 2 else "/ws/b") for i in range(5)]
    await sim.turn(created[0], "touch", reasoningEffort="none")
    pages = []
    cursor = None
    while True:
        params: dict[str, object] = {"limit": 2}
        if cursor is not None:
            params["cursor"] = cursor
        page = await sim.call("session/list", params)
        pages.append([row["sessionId"] for row in page["sessions"]])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    default = await sim.call("session/list")
    filtered = await sim.call("session/list", {"workspaceRoot": "/ws/a"})
    bad_cursor = await sim.error("session/list", {"cursor": "zzz"})
    newest_first = [created[0], *reversed(created[1:])]
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [sid for page in pages for sid in page] == newest_first
    assert [row["sessionId"] for row in default["sessions"]] == newest_first
    assert default["nextCursor"] is None
    assert {row["sessionId"] for row in filtered["sessions"]} == {created[1], created[3]}
    assert bad_cursor["code"] == -32602


async def _forking(sim: SimRun) -> None:
    source = await sim.start()
    first = await sim.turn(source, "first", reasoningEffort="none")
    await sim.turn(source, "second", reasoningEffort="none")
    first_turn = first[0]["params"]["turnId"]
    command_id = new_uuid7()
    forked, before = await sim.request(
        "session/fork",
        {"commandId": command_id, "sessionId": source, "cutPoint": {"lastTurnId": first_turn}},
    )
    whole = await sim.call("session/fork", {"commandId": new_uuid7(), "sessionId": source})
    invalid = await sim.error(
        "session/fork",
        {
            "commandId": new_uuid7(),
            "sessionId": source,
            "cutPoint": {"lastTurnId": new_uuid7()},
        },
    )
    result = forked["result"]
    assert labels(before) == ["session/started"]
    assert before[0]["params"]["session"] == result["session"]
    origin = result["session"]["forkedFrom"]
    assert origin == {
        "sessionId": source,
        "cutCursor": f"session:{source}:turn:1",
        "cutExplicit": True,
        "commandId": command_id,
    }
    assert result["session"]["turnCount"] == 1
    assert [item["text"] for item in result["history"]["items"]] == ["first", "first"]
    assert result["pendingRequests"] == []
    assert [item["text"] for item in whole["history"]["items"]] == [
        "first",
        "first",
        "second",
        "second",
    ]
    assert whole["session"]["forkedFrom"]["cutExplicit"] is False
    assert invalid["code"] == -32023
    assert invalid["data"]["kind"] == "forkBoundaryInvalid"


async def test_session_settings_listing_and_forking(tmp_path: Path) -> None:
    """Model, approval mode and effort changes with their events; list paging; forks."""
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        await _listing(sim)
        await _settings(sim)
        await _forking(sim)
