"""JetBrains AIR file-change reports: the opt-in, the request check, the report and its cap."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest

from muse_acp.agent.cards.card_states import TurnCards
from muse_acp.agent.handshake.capabilities import Negotiated, initialize_response, negotiate
from muse_acp.agent.handshake.file_change_report import PATHS_LIMIT, UNCERTAINTY, report, requested
from muse_acp.host.features import features_of
from muse_acp.rpc import INVALID_PARAMS, RpcError
from muse_acp_wire import acp, msp

AIR_ASKS: Final = {"jetbrains": {"air": {"version": 1, "capabilities": ["agentFileChangeReport"]}}}


def _initialize(meta: Any) -> acp.InitializeRequest:
    return acp.InitializeRequest.model_validate(
        {"protocolVersion": 1, "clientCapabilities": {"_meta": meta}}
    )


@pytest.mark.parametrize(
    ("meta", "asks"),
    [
        (AIR_ASKS, True),
        (
            {"jetbrains": {"air": {"version": 3, "capabilities": ["x", "agentFileChangeReport"]}}},
            True,
        ),
        ({"jetbrains": {"air": {"version": 1, "capabilities": ["somethingElse"]}}}, False),
        ({"jetbrains": {"air": {"version": 0, "capabilities": ["agentFileChangeReport"]}}}, False),
        (
            {"jetbrains": {"air": {"version": "1", "capabilities": ["agentFileChangeReport"]}}},
            False,
        ),
        ({"jetbrains": {"air": {"capabilities": ["agentFileChangeReport"]}}}, False),
        (
            {"jetbrains": {"air": {"version": True, "capabilities": ["agentFileChangeReport"]}}},
            False,
        ),
        ({"jetbrains": "air"}, False),
        ({"muse/output": 1}, False),
        (None, False),
    ],
)
def test_the_report_is_negotiated_only_when_the_client_asks(meta: Any, asks: bool) -> None:
    negotiated = negotiate(_initialize(meta), features_of("1.2.1", trust_newer=False))
    assert negotiated.file_change_report is asks
    advertised = initialize_response(negotiated).model_dump(
        mode="json", by_alias=True, exclude_unset=True
    )
    jetbrains = (advertised.get("_meta") or {}).get("jetbrains")
    expected = {"air": {"version": 1, "capabilities": ["agentFileChangeReport"]}}
    assert jetbrains == (expected if asks else None)


def test_the_exec_backend_negotiates_no_report() -> None:
    exec_backend = acp.MuseBackendReport(backend="exec", reason="configured")
    assert not negotiate(
        _initialize(AIR_ASKS), features_of("1.0.0", trust_newer=False), exec_backend
    ).file_change_report
    assert "_meta" not in initialize_response(Negotiated()).model_dump(exclude_unset=True)


def _prompt_meta(request: Any) -> dict[str, Any]:
    return {"jetbrains": {"air": {"agentFileChangeReportRequest": request}}}


@pytest.mark.parametrize(
    ("meta", "request_id"),
    [
        (_prompt_meta({"version": 1, "requestId": "req-1"}), "req-1"),
        (_prompt_meta({"version": 1, "requestId": "A.b_c:d-9"}), "A.b_c:d-9"),
        (_prompt_meta({"version": 1, "requestId": "x" * 128}), "x" * 128),
        (None, None),
        ({}, None),
        ({"jetbrains": {"air": {"other": 1}}}, None),
        ({"jetbrains": "not an object"}, None),
        ({"muse/other": {"requestId": "r"}}, None),
    ],
)
def test_a_well_formed_request_or_none(meta: Any, request_id: str | None) -> None:
    assert requested(True, meta) == request_id


@pytest.mark.parametrize(
    ("asked", "detail"),
    [
        ({"version": 1, "requestId": "req-1", "extra": True}, "extra"),
        ({"version": 2, "requestId": "req-1"}, "version"),
        ({"version": True, "requestId": "req-1"}, "version"),
        ({"version": "1", "requestId": "req-1"}, "version"),
        ({"requestId": "req-1"}, "version"),
        ({"version": 1}, "requestId"),
        ({"version": 1, "requestId": ""}, "requestId"),
        ({"version": 1, "requestId": "x" * 129}, "requestId"),
        ({"version": 1, "requestId": "has space"}, "requestId"),
        ({"version": 1, "requestId": "a/b"}, "requestId"),
        ({"version": 1, "requestId": 7}, "requestId"),
        (None, "agentFileChangeReportRequest"),
        ("req-1", "agentFileChangeReportRequest"),
    ],
)
def test_a_malformed_request_is_invalid_params(asked: Any, detail: str) -> None:
    with pytest.raises(RpcError) as raised:
        requested(True, _prompt_meta(asked))
    assert raised.value.code == INVALID_PARAMS
    assert "_meta.jetbrains.air.agentFileChangeReportRequest" in raised.value.message
    assert detail in raised.value.message
    assert "exactly {version: 1, requestId}" in raised.value.message


def test_a_request_is_ignored_where_the_report_was_not_negotiated() -> None:
    assert requested(False, _prompt_meta({"version": 9})) is None


def _air(update: acp.SessionInfoUpdateSessionUpdate) -> dict[str, Any]:
    dumped = update.model_dump(mode="json", by_alias=True, exclude_unset=True)
    acp.SessionNotification.model_validate({"sessionId": "s", "update": dumped})
    assert dumped["sessionUpdate"] == "session_info_update"
    assert set(dumped) == {"sessionUpdate", "_meta"}
    air: dict[str, Any] = dumped["_meta"]["jetbrains"]["air"]
    assert air["version"] == 1
    return air["agentFileChangeReport"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("paths", "listed", "truncated"),
    [
        ([], [], False),
        (["/w/b", "/w/a", "/w/b"], ["/w/a", "/w/b"], False),
        (
            [f"/w/{n:05}" for n in range(PATHS_LIMIT)],
            [f"/w/{n:05}" for n in range(PATHS_LIMIT)],
            False,
        ),
        (
            [f"/w/{n:05}" for n in reversed(range(PATHS_LIMIT + 5))],
            [f"/w/{n:05}" for n in range(PATHS_LIMIT)],
            True,
        ),
        ([f"/w/{n % 3}" for n in range(PATHS_LIMIT * 2)], ["/w/0", "/w/1", "/w/2"], False),
    ],
)
def test_a_report_lists_sorted_unique_paths_within_the_cap(
    paths: list[str], listed: list[str], truncated: bool
) -> None:
    assert PATHS_LIMIT == 1000
    assert _air(report("req-1", paths, cancelled=False)) == {
        "version": 1,
        "requestId": "req-1",
        "status": "reported",
        "paths": listed,
        "declaredComplete": False,
        "truncated": truncated,
        "uncertainty": UNCERTAINTY,
    }


def test_a_cancelled_prompt_reports_unavailable() -> None:
    assert _air(report("req-1", ["/w/a"], cancelled=True)) == {
        "version": 1,
        "requestId": "req-1",
        "status": "unavailable",
        "reason": "cancelled",
    }


def _tool(call: str, status: str, tool: str, args: dict[str, Any]) -> msp.ToolCallItem:
    wire = {
        "itemId": f"item-{call}",
        "kind": "toolCall",
        "turnId": "turn-1",
        "revision": 1 if status == "inProgress" else 2,
        "status": status,
        "tool": tool,
        "callId": call,
        "args": json.dumps(args),
    }
    item = msp.ItemEventParams.model_validate(
        {"sessionId": "s", "viewCursor": "v:s:1", "item": wire}
    ).item
    assert isinstance(item, msp.ToolCallItem)
    return item


def test_only_editing_tools_that_completed_count_as_edited() -> None:
    cards = TurnCards("s", cwd="/w")
    write = {"path": "a.txt", "content": "x"}
    for call, status, tool, args in [
        ("1", "inProgress", "write_file", {"path": "running.txt", "content": "x"}),
        ("2", "completed", "write_file", write),
        ("3", "completed", "edit_file", {"path": "/elsewhere/b.txt", "find": "a", "replace": "b"}),
        ("4", "failed", "write_file", {"path": "failed.txt", "content": "x"}),
        ("5", "rejected", "edit_file", {"path": "rejected.txt", "find": "a", "replace": "b"}),
        ("6", "completed", "bash", {"command": "touch shell.txt", "path": "shell.txt"}),
        ("7", "completed", "read_file", {"path": "read.txt"}),
        ("8", "completed", "write_file", {"path": "sub/../a.txt", "content": "y"}),
        ("9", "completed", "write_file", {"content": "no path"}),
    ]:
        cards.sighting(call, _tool(call, status, tool, args))
    assert cards.edited_paths == {"/w/a.txt", "/elsewhere/b.txt"}


def test_a_completed_call_whose_approval_was_refused_is_not_counted() -> None:
    cards = TurnCards("s", cwd="/w")
    cards.refused("1", "user")
    cards.sighting("1", _tool("1", "completed", "write_file", {"path": "a.txt", "content": "x"}))
    assert cards.edited_paths == frozenset()


def test_relative_paths_without_a_workspace_are_not_counted() -> None:
    cards = TurnCards("s")
    cards.sighting("1", _tool("1", "completed", "write_file", {"path": "a.txt", "content": "x"}))
    cards.sighting("2", _tool("2", "completed", "write_file", {"path": "/abs.txt", "content": "x"}))
    assert cards.edited_paths == {"/abs.txt"}
