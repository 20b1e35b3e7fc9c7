"""The handshake, framing errors and the checks every command goes through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from muse_acp.host.bindings import bindings_for
from muse_acp.sim.options.versions import PLAYED_ON_OLDER
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.profile import facts_for
from muse_acp_wire import msp_1_1_1, msp_1_2_1

from .captures import REPO_ROOT
from .harness import SimPeer, labels, sim_served
from .runs import sim_hosted
from .validation import VERSIONS

pytestmark = pytest.mark.anyio

SPEC = REPO_ROOT / "spec" / "msp"
INITIALIZE_MEMBERS = [
    "serverInfo",
    "userAgent",
    "museHome",
    "platformFamily",
    "platformOs",
    "schema",
    "grantedCapabilities",
    "experimentalApi",
    "sessionDurability",
]


@pytest.mark.parametrize(
    ("version", "fingerprint"),
    [("1.1.1", msp_1_1_1.SCHEMA_FINGERPRINT), ("1.2.1", msp_1_2_1.SCHEMA_FINGERPRINT)],
)
async def test_initialize_reports_the_simulated_host_in_real_member_order(
    tmp_path: Path, version: str, fingerprint: str
) -> None:
    async with sim_hosted(tmp_path, version=version) as sim:
        result = await sim.initialize(experimentalApi=True, requestedCapabilities=["bogus"])
    assert list(result) == INITIALIZE_MEMBERS
    assert result["serverInfo"] == {"name": "muse", "version": version}
    assert result["schema"] == {"version": 1, "fingerprint": fingerprint}
    assert result["userAgent"].startswith(f"muse-sim/{version}-")
    assert result["museHome"] == str(tmp_path)
    assert result["grantedCapabilities"] == []
    assert result["experimentalApi"] is True
    assert result["sessionDurability"] == "durable"
    msp_1_2_1.InitializeResult.model_validate(result, by_alias=True, by_name=False)


async def test_no_session_log_makes_sessions_ephemeral(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, "--no-session-log") as sim:
        result = await sim.initialize()
        session_id = await sim.start()
        read = await sim.call("session/read", {"sessionId": session_id})
    assert result["sessionDurability"] == "ephemeral"
    assert read["session"]["path"] == ""
    assert not (tmp_path / "sessions").exists()


async def test_calls_before_the_handshake_finishes_are_not_initialized(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as sim:
        early = await sim.error("model/list")
        await sim.call("initialize", {"clientInfo": {"name": "sim_tests", "version": "1"}})
        before_initialized = await sim.error("model/list")
        again = await sim.error("initialize", {"clientInfo": {"name": "x", "version": "1"}})
        await sim.notify("initialized")
        models = await sim.call("model/list")
    assert early == {
        "code": -32600,
        "message": "the connection is not initialized yet",
        "data": {"kind": "notInitialized"},
    }
    assert before_initialized["data"] == {"kind": "notInitialized"}
    assert again["code"] == -32600
    assert again["data"] == {"kind": "alreadyInitialized"}
    assert [model["modelId"] for model in models["models"]] == [
        "muse-spark-1.2",
        "muse-spark-1.3",
        "muse-spark-1.3-contributor",
    ]


async def _unreadable_frames(sim: SimPeer) -> None:
    await sim.send_raw(b'{"jsonrpc":"2.0","id":5,"method":')
    parse = await sim.next()
    await sim.send_raw(b'[{"jsonrpc":"2.0","id":6,"method":"model/list"}]')
    batch = await sim.next()
    await sim.send_raw(b'{"jsonrpc":"1.0","id":7,"method":"model/list"}')
    version = await sim.next()
    await sim.send_raw(b'{"jsonrpc":"2.0","id":{"x":1},"method":"model/list"}')
    bad_id = await sim.next()
    assert parse == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32700,
            "message": "the frame is not valid JSON",
            "data": {"kind": "parseError"},
        },
    }
    assert batch["id"] is None
    assert batch["error"]["code"] == -32600
    assert batch["error"]["data"] == {"kind": "invalidRequest"}
    assert version["id"] == 7
    assert version["error"]["data"] == {"kind": "invalidRequest"}
    assert bad_id["id"] is None
    assert bad_id["error"]["data"] == {"kind": "invalidRequest"}


async def _oversized_line(sim: SimPeer) -> None:
    await sim.send_raw(b'{"jsonrpc":"2.0","id":9,"method":"' + b"x" * (10 * 1024 * 1024) + b'"}')
    refused = await sim.next()
    models = await sim.call("model/list")
    assert refused["id"] is None
    assert refused["error"]["code"] == -32002
    assert refused["error"]["data"] == {"kind": "inputTooLarge", "limitBytes": 10 * 1024 * 1024}
    assert models["models"]


async def _error_kinds(sim: SimPeer) -> None:
    unknown = await sim.error("nope/nope", {})
    missing = await sim.error("turn/start", {"commandId": new_uuid7()})
    not_an_object = await sim.error("session/list", [])  # type: ignore[arg-type]
    too_many = await sim.error("session/list", {"limit": 201})
    no_session = await sim.error("session/read", {"sessionId": new_uuid7()})
    assert unknown == {
        "code": -32601,
        "message": "unknown method nope/nope",
        "data": {"kind": "methodNotFound"},
    }
    for error in (missing, not_an_object, too_many):
        assert error["code"] == -32602
        assert error["data"] == {"kind": "invalidParams", "retryable": False}
    assert no_session["code"] == -32020
    assert no_session["data"]["kind"] == "sessionNotFound"


async def _command_ids(sim: SimPeer) -> None:
    error = await sim.error("session/start", {"commandId": "5f0c1f2e-0f0a-4c6e-9d4e-1b2c3d4e5f60"})
    assert error == {
        "code": -32602,
        "message": "invalid session/start commandId: expected UUIDv7",
        "data": {"kind": "invalidParams", "retryable": False},
    }


async def test_unusable_frames_and_bad_requests_are_answered_with_a_kind(
    tmp_path: Path,
) -> None:
    """Parse errors, batches and bad envelopes (``id: null`` when unreadable), oversized
    lines, unknown methods, invalid params, unknown sessions and non-UUIDv7 command ids."""
    async with sim_hosted(tmp_path) as sim:
        await _unreadable_frames(sim)
        await sim.initialize()
        await _oversized_line(sim)
        await _error_kinds(sim)
        await _command_ids(sim)


async def test_a_replayed_command_id_returns_the_first_answer_without_effects(
    tmp_path: Path,
) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        params = {"commandId": new_uuid7(), "sessionId": new_uuid7(), "workspaceRoot": "/p"}
        first, before_first = await sim.request("session/start", params)
        second, before_second = await sim.request("session/start", params)
        listed = await sim.call("session/list")
    assert labels(before_first) == ["session/started"]
    assert before_second == []
    assert second["result"] == first["result"]
    assert len(listed["sessions"]) == 1


async def test_a_fifth_command_in_flight_is_backpressured(tmp_path: Path) -> None:
    env = {"MUSE_SIM_FAULTS": "hang-ack:session/setModel"}
    async with sim_hosted(tmp_path, env=env) as sim:
        await sim.initialize()
        session_id = await sim.start()
        model = {"modelId": "muse-spark-1.2"}
        for _ in range(4):
            await sim.send(
                {
                    "jsonrpc": "2.0",
                    "id": sim.new_id(),
                    "method": "session/setModel",
                    "params": {"commandId": new_uuid7(), "sessionId": session_id, "model": model},
                }
            )
        refused = await sim.error(
            "session/setApprovalMode",
            {"commandId": new_uuid7(), "sessionId": session_id, "mode": "allowAll"},
        )
        reads = await sim.call("session/read", {"sessionId": session_id})
    assert refused == {
        "code": -32031,
        "message": "too many commands in flight (capacity 4); retry once one is answered",
        "data": {"kind": "backpressured", "retryable": True, "capacity": 4},
    }
    assert reads["session"]["approvalMode"]["mode"] == "promptUnmatched"


async def test_the_capture_file_records_every_request_line_as_received(tmp_path: Path) -> None:
    capture = tmp_path / "capture.ndjson"
    async with sim_hosted(tmp_path, env={"MUSE_SIM_CAPTURE": str(capture)}) as sim:
        await sim.send_raw(
            b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", '
            b'"params": {"clientInfo": {"name": "a", "version": "1"}}}'
        )
        await sim.next()
        await sim.send_raw(b'{"jsonrpc":"2.0","method":"initialized"}')
        await sim.send_raw(b"not json")
        await sim.next()
        await sim.call("model/list")
        assert await sim.close() == 0
    lines = capture.read_bytes().splitlines()
    assert lines[0] == (
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", '
        b'"params": {"clientInfo": {"name": "a", "version": "1"}}}'
    )
    assert lines[1] == b'{"jsonrpc":"2.0","method":"initialized"}'
    assert [line.split(b'"method":"')[1].split(b'"')[0] for line in lines[2:]] == [b"model/list"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_grantable_capabilities_are_those_of_the_version_bundle(version: str) -> None:
    # A version played on an older bundle's surface grants as that bundle (1.4.13's own also
    # lists computerUseSetup, computerUseHostSetup and sessionRename, which are not played).
    played_on = PLAYED_ON_OLDER.get(version, bindings_for(version).version)
    schema = json.loads((SPEC / played_on / "msp.schema.json").read_text(encoding="utf-8"))
    assert facts_for(version).grantable == tuple(schema["capabilities"]["grantable"])


@pytest.mark.parametrize(
    ("version", "asked", "unasked"),
    [
        ("1.1.1", ["userShell"], []),
        ("1.2.1", ["userShell"], []),
        ("1.3.0", ["userShell", "sessionMcp", "sessionListStream"], []),
        (
            "1.4.2",
            ["userShell", "sessionMcp", "sessionListStream", "feedback"],
            ["sessionListStream"],
        ),
        (
            "1.4.4",
            ["userShell", "sessionMcp", "sessionListStream", "feedback"],
            ["sessionListStream"],
        ),
        (
            "1.4.13",
            ["userShell", "sessionMcp", "sessionListStream", "feedback"],
            ["sessionListStream"],
        ),
    ],
)
async def test_capabilities_are_granted_as_the_version_grants_them(
    tmp_path: Path, version: str, asked: list[str], unasked: list[str]
) -> None:
    """Only names the version's bundle lists as grantable; unknown and reserved names are
    silently left out; 1.4.2 grants ``sessionListStream`` unasked."""
    requested = ["bogus", "feedback", "rawLog", "sessionListStream", "sessionMcp", "userShell"]
    async with sim_served(tmp_path / "asked", version) as sim:
        granted = await sim.initialize(requestedCapabilities=requested)
    async with sim_served(tmp_path / "unasked", version) as sim:
        bare = await sim.initialize()
    async with sim_served(tmp_path / "none", version) as sim:
        empty = await sim.initialize(requestedCapabilities=[])
    assert granted["grantedCapabilities"] == asked
    assert bare["grantedCapabilities"] == unasked
    assert empty["grantedCapabilities"] == unasked
