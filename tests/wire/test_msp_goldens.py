"""Golden MSP messages against the generated ``muse_acp_wire.msp_*`` bindings.

Each file under ``tests/golden/msp/valid`` is one params or result object, registered below with
the host version whose bindings parse it and its model; it must validate and dump back to the
same JSON. Each file under ``tests/golden/msp/invalid`` must be refused by its model. The other
tests pin the tolerance rules MSP relies on (unknown item kinds, open enums, unknown members),
the differences between consecutive bundles, and that a newer bundle never demands of an older
host what it did not send: the adapter parses every host with its vocabulary, muse-acp's own
reading (``msp_vocabulary``, registered as ``"vocabulary"``), which started as the hand-written
1.4.2 bundle.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
from pydantic import ValidationError

from muse_acp_wire import (
    msp_1_1_1 as v111,
    msp_1_2_1 as v121,
    msp_1_3_0 as v130,
    msp_vocabulary as voc,
)
from muse_acp_wire._base import WireModel

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
GOLDEN_DIR: Final = REPO_ROOT / "tests" / "golden" / "msp"
SPEC_DIR: Final = REPO_ROOT / "spec" / "msp"

Case = tuple[str, type[WireModel]]

VALID: Final[dict[str, Case]] = {
    "initialize_params": ("1.1.1", v111.InitializeParams),
    "initialize_result": ("1.1.1", v111.InitializeResult),
    "session_start_params": ("1.1.1", v111.SessionStartParams),
    "session_start_result": ("1.1.1", v111.SessionStartResult),
    "session_started": ("1.1.1", v111.SessionStartedParams),
    "session_resume_result": ("1.1.1", v111.SessionHistoryResult),
    "session_resume_result_snapshot": ("1.1.1", v111.SessionHistoryResult),
    "session_read_result_inline": ("1.1.1", v111.SessionHistoryResult),
    "session_fork_result": ("1.1.1", v111.SessionHistoryResult),
    "session_list_result": ("1.2.1", v121.SessionListResult),
    "session_set_model_params": ("1.1.1", v111.SessionSetModelParams),
    "session_set_approval_mode_result": ("1.1.1", v111.SessionSetApprovalModeResult),
    "session_rename_params": ("1.2.1", v121.SessionRenameParams),
    "session_rename_result": ("1.2.1", v121.SessionRenameResult),
    "session_name_changed": ("1.2.1", v121.SessionNameChangedParams),
    "model_list_result": ("1.1.1", v111.ModelListResult),
    "turn_start_params": ("1.1.1", v111.TurnStartParams),
    "turn_start_result": ("1.1.1", v111.TurnStartResult),
    "turn_start_result_queued": ("1.1.1", v111.TurnStartResult),
    "turn_steer_params": ("1.1.1", v111.TurnSteerParams),
    "turn_command_result": ("1.1.1", v111.TurnCommandResult),
    "turn_started": ("1.1.1", v111.TurnStartedParams),
    "turn_completed": ("1.1.1", v111.TurnCompletedParams),
    "turn_completed_failed": ("1.1.1", v111.TurnCompletedParams),
    "turn_completed_cancelled": ("1.1.1", v111.TurnCompletedParams),
    "item_user_message": ("1.1.1", v111.UserMessageItem),
    "item_agent_message": ("1.1.1", v111.AgentMessageItem),
    "item_agent_message_started": ("1.1.1", v111.AgentMessageItem),
    "item_reasoning": ("1.1.1", v111.ReasoningItem),
    "item_tool_call": ("1.1.1", v111.ToolCallItem),
    "item_tool_call_output_ref": ("1.2.1", v121.ToolCallItem),
    "item_user_shell": ("1.1.1", v111.UserShellItem),
    "item_workflow": ("1.1.1", v111.WorkflowItem),
    "item_subagent": ("1.1.1", v111.SubagentItem),
    "item_compaction": ("1.1.1", v111.CompactionItem),
    "item_unknown_kind": ("1.1.1", v111.UnknownItem),
    "item_completed": ("1.1.1", v111.ItemEventParams),
    "item_started_ephemeral": ("1.1.1", v111.ItemEventParams),
    "item_delta": ("1.1.1", v111.ItemDeltaParams),
    "approval_requested": ("1.1.1", v111.ApprovalRequestedParams),
    "approval_requested_file_access": ("1.2.1", v121.ApprovalRequestedParams),
    "approval_updated": ("1.1.1", v111.ApprovalUpdatedParams),
    "approval_resolved": ("1.1.1", v111.ApprovalResolvedParams),
    "approval_resolved_by_policy": ("1.1.1", v111.ApprovalResolvedParams),
    "approval_decide_params": ("1.1.1", v111.ApprovalDecideParams),
    "approval_decide_result": ("1.1.1", v111.ApprovalDecideResult),
    "request_receipt": ("1.1.1", v111.RequestReceipt),
    "user_input_requested": ("1.1.1", v111.UserInputRequestedParams),
    "user_input_answer_params": ("1.1.1", v111.UserInputAnswerParams),
    "user_input_cancel_params": ("1.1.1", v111.UserInputCancelParams),
    "user_input_command_result": ("1.1.1", v111.UserInputCommandResult),
    "user_input_settled": ("1.1.1", v111.UserInputSettledParams),
    "view_page_params": ("1.1.1", v111.ViewPageParams),
    "view_page_result": ("1.1.1", v111.ViewPageResult),
    "view_page_result_end": ("1.1.1", v111.ViewPageResult),
    "view_gap": ("1.1.1", v111.ViewGapParams),
    "read_output_params": ("1.2.1", v121.ItemReadOutputParams),
    "read_output_result": ("1.2.1", v121.ItemReadOutputResult),
    "token_usage": ("1.1.1", v111.SessionTokenUsageParams),
    "context_usage": ("1.1.1", v111.SessionContextUsageParams),
    "todo_list_changed": ("1.1.1", v111.SessionTodoListChangedParams),
    "model_changed": ("1.1.1", v111.SessionModelChangedParams),
    "approval_mode_changed": ("1.1.1", v111.SessionApprovalModeChangedParams),
    "branch_changed": ("1.1.1", v111.SessionBranchChangedParams),
    "goal_changed_cleared": ("1.1.1", v111.SessionGoalChangedParams),
    "error_data_command_rejected": ("1.1.1", v111.ErrorData),
    "error_data_approval_already_resolved": ("1.1.1", v111.ErrorData),
    "error_data_output_unavailable": ("1.2.1", v121.ErrorData),
    "jsonrpc_notification": ("1.1.1", v111.JsonRpcNotification),
    "jsonrpc_error_response": ("1.1.1", v111.JsonRpcErrorResponse),
    "usage_read_result": ("vocabulary", voc.UsageReadResult),
    "account_read_result": ("1.1.1", v111.AccountState),
    "account_read_result_signed_in": ("vocabulary", voc.AccountState),
    "usage_read_result_unobserved": ("vocabulary", voc.UsageReadResult),
    "goal_set_params": ("vocabulary", voc.GoalSetParams),
    "goal_command_result": ("vocabulary", voc.GoalCommandResult),
    "goal_changed_past_complete": ("vocabulary", voc.SessionGoalChangedParams),
    "session_status_changed": ("vocabulary", voc.SessionStatusChangedParams),
    "turn_start_params_skill": ("vocabulary", voc.TurnStartParams),
    "item_tool_call_backgrounded": ("vocabulary", voc.ToolCallItem),
    "session_list_changed": ("vocabulary", voc.SessionListChangedParams),
    "session_start_params_workspace_roots": ("vocabulary", voc.SessionStartParams),
    "approval_requested_protected_write": ("vocabulary", voc.ApprovalRequestedParams),
    "turn_foreground_completed": ("vocabulary", voc.TurnForegroundCompletedParams),
    "error_data_approval_requirement_stale": ("vocabulary", voc.ErrorData),
}

INVALID: Final[dict[str, Case]] = {
    "initialize_params_client_name_not_an_identifier": ("1.1.1", v111.InitializeParams),
    "turn_start_params_empty_input": ("1.1.1", v111.TurnStartParams),
    "turn_start_params_unknown_part_type": ("1.1.1", v111.TurnStartParams),
    "turn_start_params_unknown_reasoning_effort": ("1.1.1", v111.TurnStartParams),
    "turn_start_params_image_without_media_type": ("1.1.1", v111.TurnStartParams),
    "view_page_params_limit_above_maximum": ("1.1.1", v111.ViewPageParams),
    "view_page_params_unknown_direction": ("1.1.1", v111.ViewPageParams),
    "session_list_params_limit_zero": ("1.1.1", v111.SessionListParams),
    "item_tool_call_args_as_object": ("1.1.1", v111.ToolCallItem),
    "session_missing_active_turn_id": ("1.1.1", v111.Session),
    "session_history_result_missing_pending_requests": ("1.1.1", v111.SessionHistoryResult),
    "approval_decide_params_missing_requirement_id": ("1.1.1", v111.ApprovalDecideParams),
    "user_input_answer_params_free_text_too_long": ("1.1.1", v111.UserInputAnswerParams),
    "turn_completed_missing_terminal": ("1.1.1", v111.TurnCompletedParams),
    "error_data_missing_kind": ("1.1.1", v111.ErrorData),
    "read_output_params_negative_offset": ("1.2.1", v121.ItemReadOutputParams),
    "read_output_result_missing_eof": ("1.2.1", v121.ItemReadOutputResult),
    "approval_stage_position_zero": ("1.1.1", v111.ApprovalStage),
    # muse-acp's own requests: it builds them stricter than Muse's 1.3.0 declarations require.
    "turn_start_params_skill_without_selector": ("vocabulary", voc.TurnStartParams),
    "workflow_child_control_params_attempt_zero": ("vocabulary", voc.WorkflowChildControlParams),
}

OFFICIAL_1_3_0: Final[dict[str, type[WireModel]]] = {
    "usage_read_result": v130.UsageReadResult,
    "usage_read_result_unobserved": v130.UsageReadResult,
    "goal_set_params": v130.GoalSetParams,
    "goal_command_result": v130.GoalCommandResult,
    "goal_changed_past_complete": v130.SessionGoalChangedParams,
    "session_status_changed": v130.SessionStatusChangedParams,
    "turn_start_params_skill": v130.TurnStartParams,
    "item_tool_call_backgrounded": v130.Item,
}
"""The goldens of 1.3.0 frames, each with the model of Muse's own 1.3.0 declarations that types
it (``spec/msp/1.3.0``, ingested). Every one fits (members in Muse's order, not the wire's), so
that bundle declares no deviation; a recorded frame that did not fit would be one."""

_MODULE_OF_VERSION: Final = {
    "1.1.1": v111.__name__,
    "1.2.1": v121.__name__,
    "vocabulary": voc.__name__,
}
_ITEM_IN_EVENT_OF_VERSION: Final[dict[str, Callable[[Any], WireModel]]] = {
    "1.1.1": lambda event: v111.ItemEventParams.model_validate(event).item,
    "1.2.1": lambda event: v121.ItemEventParams.model_validate(event).item,
    "vocabulary": lambda event: voc.ItemEventParams.model_validate(event).item,
}


def _load(kind: str, stem: str) -> Any:
    return json.loads((GOLDEN_DIR / kind / f"{stem}.json").read_text(encoding="utf-8"))


def _stems(kind: str) -> set[str]:
    return {path.stem for path in (GOLDEN_DIR / kind).glob("*.json")}


def _dump(model: WireModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


@pytest.mark.parametrize("kind", ["valid", "invalid"])
def test_registry_lists_exactly_the_golden_files(kind: str) -> None:
    registry = VALID if kind == "valid" else INVALID
    assert _stems(kind) == set(registry)


@pytest.mark.parametrize(("stem", "case"), sorted(VALID.items()) + sorted(INVALID.items()))
def test_registered_model_comes_from_the_bindings_of_its_version(stem: str, case: Case) -> None:
    version, model = case
    assert model.__module__ == _MODULE_OF_VERSION[version], stem


@pytest.mark.parametrize(("stem", "case"), sorted(VALID.items()))
def test_valid_golden_validates_and_round_trips(stem: str, case: Case) -> None:
    _, model = case
    raw = _load("valid", stem)
    dumped = _dump(model.model_validate(raw))
    assert dumped == raw
    # Goldens are written in wire member order, which the models must reproduce.
    assert json.dumps(dumped) == json.dumps(raw)


@pytest.mark.parametrize(("stem", "model"), sorted(OFFICIAL_1_3_0.items()))
def test_a_1_3_0_golden_fits_muse_s_own_1_3_0_declarations(
    stem: str, model: type[WireModel]
) -> None:
    raw = _load("valid", stem)
    assert _dump(model.model_validate(raw)) == raw


@pytest.mark.parametrize(("stem", "case"), sorted(INVALID.items()))
def test_invalid_golden_fails_validation(stem: str, case: Case) -> None:
    _, model = case
    raw = _load("invalid", stem)
    with pytest.raises(ValidationError) as refused:
        model.model_validate(raw)
    # Each invalid golden carries exactly one defect, so it cannot pass for the wrong reason.
    assert len(refused.value.errors()) == 1


_BARE_ITEMS: Final = sorted(
    stem
    for stem, (_, model) in VALID.items()
    if stem.startswith("item_") and model.__name__.endswith("Item")
)


@pytest.mark.parametrize("stem", _BARE_ITEMS)
def test_item_inside_an_item_event_keeps_its_own_class(stem: str) -> None:
    version, model = VALID[stem]
    event = {"sessionId": "s", "viewCursor": "v:s:1", "item": _load("valid", stem)}
    item = _ITEM_IN_EVENT_OF_VERSION[version](event)
    assert type(item) is model


def test_unknown_item_kind_parses_as_unknown_item() -> None:
    item = {
        "itemId": "i-1",
        "kind": "sideChat",
        "turnId": None,
        "revision": 1,
        "status": "completed",
        "fallbackText": "a side conversation",
        "participants": 2,
    }
    raw = {"sessionId": "s", "viewCursor": "v:s:2", "item": item}
    old = v111.ItemEventParams.model_validate(raw)
    new = v121.ItemEventParams.model_validate(raw)
    assert isinstance(old.item, v111.UnknownItem)
    assert isinstance(new.item, v121.UnknownItem)
    assert old.item.kind == "sideChat"
    assert old.item.fallback_text == "a side conversation"
    assert _dump(old)["item"] == {k: v for k, v in item.items() if k != "participants"}


def test_known_item_kind_with_a_broken_member_falls_back_rather_than_failing() -> None:
    # A kind the bindings know but whose members do not fit still parses (as UnknownItem), so one
    # odd item never drops the whole event; the capture test checks real items keep their class.
    raw = {**_load("valid", "item_tool_call"), "callId": 7}
    parsed = v111.ItemEventParams.model_validate({"sessionId": "s", "viewCursor": "", "item": raw})
    assert isinstance(parsed.item, v111.UnknownItem)


def test_unknown_open_enum_values_parse() -> None:
    raw = _load("valid", "turn_completed") | {"terminal": "expired"}
    raw["sourceRange"]["stream"]["kind"] = "workflowChild"
    parsed = v111.TurnCompletedParams.model_validate(raw)
    assert parsed.terminal == "expired"
    assert parsed.source_range is not None
    assert parsed.source_range.stream.kind == "workflowChild"
    item = v111.ToolCallItem.model_validate(_load("valid", "item_tool_call") | {"status": "paused"})
    assert item.status == "paused"


def test_closed_enum_rejects_unknown_value() -> None:
    raw = _load("valid", "session_set_approval_mode_result")
    raw["effectiveMode"]["mode"] = "yolo"
    with pytest.raises(ValidationError):
        v111.SessionSetApprovalModeResult.model_validate(raw)


def test_unknown_members_are_tolerated_at_every_level() -> None:
    raw = _load("valid", "approval_requested")
    raw["riskScore"] = 0.4
    raw["subject"]["sandboxProfile"] = "strict"
    raw["availableChoices"][0]["hotkey"] = "y"
    parsed = v111.ApprovalRequestedParams.model_validate(raw)
    assert parsed.available_choices[0].choice_id == "allow_once"
    assert "riskScore" not in _dump(parsed)


def test_required_nullable_members_are_written_as_null() -> None:
    parsed = v111.Session.model_validate(_load("valid", "session_started")["session"])
    dumped = _dump(parsed)
    assert dumped["activeTurnId"] is None
    assert dumped["forkedFrom"] is None


def test_tool_call_args_stay_a_json_string() -> None:
    item = v111.ToolCallItem.model_validate(_load("valid", "item_tool_call"))
    assert json.loads(item.args) == {"command": "ls -1", "description": "List workspace files"}


def test_stored_output_and_rename_exist_only_in_the_1_2_1_bindings() -> None:
    only_in_121 = {"item/readOutput", "session/rename", "session/setReasoningEffort"}
    assert only_in_121 <= set(v121.HOST_REQUESTS)
    assert only_in_121.isdisjoint(v111.HOST_REQUESTS)
    late_events = {"session/nameChanged", "session/reasoningEffortChanged"}
    assert late_events <= set(v121.CLIENT_NOTIFICATIONS)
    assert late_events.isdisjoint(v111.CLIENT_NOTIFICATIONS)
    assert "output_ref" in v121.ToolCallItem.model_fields
    assert "output_ref" not in v111.ToolCallItem.model_fields
    assert {"name", "title", "first_user_prompt", "branch"} <= set(v121.Session.model_fields)
    assert {"name", "title", "first_user_prompt", "branch"}.isdisjoint(v111.Session.model_fields)


def _bundle(version: str) -> dict[str, Any]:
    """A hand-written bundle by version, or muse-acp's own vocabulary (``"vocabulary"``)."""
    folder = SPEC_DIR.parent / "msp-vocabulary" if version == "vocabulary" else SPEC_DIR / version
    document: dict[str, Any] = json.loads((folder / "msp.schema.json").read_text(encoding="utf-8"))
    return document


def test_bundles_differ_only_in_the_1_2_1_additions() -> None:
    old, new = _bundle("1.1.1"), _bundle("1.2.1")
    added = {
        "OutputRef",
        "OutputRefKind",
        "OutputEncoding",
        "ItemReadOutputParams",
        "ItemReadOutputResult",
        "SessionRenameParams",
        "SessionRenameResult",
        "SessionSetReasoningEffortParams",
        "SessionNameChangedParams",
        "SessionReasoningEffortChangedParams",
        "SessionConfig",
        "SessionMcpServerConfig",
        "SessionMcpServerMode",
        "SessionMcpStdioFraming",
        "SessionMcpStdioServer",
    }
    changed = {
        "Session",
        "ToolCallItem",
        "UserShellItem",
        "PendingRequest",
        "SessionStartParams",
        "SessionResumeParams",
    }
    assert set(new["$defs"]) - set(old["$defs"]) == added
    assert set(old["$defs"]) <= set(new["$defs"])
    differing = {name for name, schema in old["$defs"].items() if new["$defs"][name] != schema}
    assert differing == changed
    for table in ("errors", "capabilities", "reserved"):
        assert old[table] == new[table]


@pytest.mark.parametrize(
    ("version", "fingerprint"),
    [
        ("1.1.1", v111.SCHEMA_FINGERPRINT),
        ("1.2.1", v121.SCHEMA_FINGERPRINT),
    ],
)
def test_manifest_fingerprint_is_the_hash_of_the_canonical_bundle(
    version: str, fingerprint: str
) -> None:
    canonical = json.dumps(_bundle(version), sort_keys=True, separators=(",", ":"))
    expected = "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    manifest = json.loads((SPEC_DIR / version / "manifest.json").read_text(encoding="utf-8"))
    assert manifest == {"experimental": False, "fingerprint": expected, "schemaVersion": 1}
    assert fingerprint == expected


def test_goals_tasks_skills_and_usage_arrive_with_the_1_3_0_bindings() -> None:
    added = {
        "goal/set",
        "goal/edit",
        "goal/clear",
        "goal/pause",
        "goal/resume",
        "task/background",
        "task/stop",
        "task/stopAll",
        "workflow/cancel",
        "workflow/childControl",
        "skill/list",
        "usage/read",
    }
    assert added <= set(v130.HOST_REQUESTS)
    assert added.isdisjoint(v121.HOST_REQUESTS)
    events = {
        "session/statusChanged",
        "session/viewHealthChanged",
        "skill/changed",
        "usage/changed",
    }
    assert events <= set(v130.CLIENT_NOTIFICATIONS)
    assert events.isdisjoint(v121.CLIENT_NOTIFICATIONS)
    assert v130.HOST_REQUESTS["usage/read"].params is None
    assert {"attention", "last_activity_at"} <= set(v130.Session.model_fields)
    assert {"background", "background_initiator", "patch_ref"} <= set(v130.Item.model_fields)
    assert any(row.code == -32032 and row.kind == "skillNotFound" for row in v130.ERRORS)


@pytest.mark.parametrize("module", [v111, v121, voc])
def test_every_bundle_written_from_evidence_has_the_experimental_account_read(module: Any) -> None:
    spec = module.HOST_REQUESTS["account/read"]
    assert (spec.params, spec.result, spec.command) == (None, module.AccountState, False)
    assert "experimentalApi" in (module.AccountState.__doc__ or "")
    unknown = module.AccountState.model_validate(
        {"state": "deviceToken", "credentialRequired": False}
    )
    assert unknown.state == "deviceToken"
    assert ("avatar_url" in module.AccountState.model_fields) == (module is voc)


def test_list_stream_deletion_and_foreground_arrive_with_the_vocabulary() -> None:
    assert "session/delete" in voc.HOST_REQUESTS
    assert "session/delete" not in v130.HOST_REQUESTS
    events = {"session/listChanged", "session/deleteCompleted", "turn/foregroundCompleted"}
    assert events <= set(voc.CLIENT_NOTIFICATIONS)
    # Muse's own 1.3.0 declarations already stream the session list (recorded from 1.4.0 on).
    assert events & set(v130.CLIENT_NOTIFICATIONS) == {"session/listChanged"}
    assert "sessionListStream" in _bundle("1.3.0")["capabilities"]["grantable"]
    assert "workspace_roots" in voc.SessionStartParams.model_fields
    assert "workspace_roots" in voc.TurnStartParams.model_fields
    assert "workspace_roots" not in v130.TurnStartParams.model_fields
    assert _bundle("vocabulary")["capabilities"]["grantable"] == [
        "userShell",
        "sessionMcp",
        "sessionListStream",
        "feedback",
    ]
    assert {(row.code, row.kind) for row in voc.ERRORS} >= {
        (-32029, "workspaceNotTrusted"),
        (-32033, "computerUseUnavailable"),
        (-32038, "uploadNotFound"),
    }


def _enums(node: Any, path: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    if isinstance(node, dict):
        if isinstance(node.get("enum"), list):
            found[path] = {json.dumps(v) for v in node["enum"]}
        for key, value in node.items():
            found |= _enums(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found |= _enums(value, f"{path}/{index}")
    return found


def _variants(definition: dict[str, Any]) -> set[str]:
    members = definition.get("oneOf", definition.get("anyOf", []))
    return {json.dumps(member, sort_keys=True) for member in members}


def _shape(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in schema.items() if key != "description"}


# Members whose schema a newer bundle changed on purpose, each so that it accepts everything the
# old one did: a grant list typed by the open CapabilityName enum, a signal real hosts record as
# a number, and goal progress that hosts pass through past 100.
# The vocabulary is compared with 1.2.1, the newest bundle written from evidence; Muse's own
# declarations (1.3.0 on) name types otherwise, and codegen.fit holds the vocabulary to them.
_WIDENED: Final = {
    ("1.2.1", "vocabulary"): {
        "InitializeResult.grantedCapabilities",
        "UserShellItem.exitSignal",
        "Goal.percentComplete",
        # Widened to read what Muse's declarations allow (tests/generator/test_vocabulary_fit.py).
        "ErrorData.earliestCursor",
        "UserInputSettledParams.decidedAt",
    },
}
_ANY_OBJECT: Final = {"type": "object", "additionalProperties": True}
"""What the vocabulary reads every event's ``sourceRange`` as: nothing in muse-acp reads its
members, and validating them as four nested models cost about half of validating an event."""


@pytest.mark.parametrize(("old_version", "new_version"), sorted(_WIDENED))
def test_a_newer_bundle_demands_nothing_an_older_host_did_not_send(
    old_version: str, new_version: str
) -> None:
    old, new = _bundle(old_version), _bundle(new_version)
    for table in ("methods", "notifications"):
        for method, spec in old[table].items():
            assert new[table].get(method) == spec, f"{table} {method} changed or was dropped"
    assert set(old["$defs"]) <= set(new["$defs"])
    retyped = set()
    for name, before in old["$defs"].items():
        after = new["$defs"][name]
        grown = set(after.get("required", [])) - set(before.get("required", []))
        assert not grown, f"{name} now requires {sorted(grown)}"
        assert _variants(before) <= _variants(after), f"{name} lost a union member"
        for prop, schema in before.get("properties", {}).items():
            assert prop in after["properties"], f"{name}.{prop} was dropped"
            if _shape(after["properties"][prop]) == _shape(schema):
                continue
            if prop == "sourceRange" and new_version == "vocabulary":
                assert _shape(after["properties"][prop]) == _ANY_OBJECT, f"{name}.{prop}"
            else:
                retyped.add(f"{name}.{prop}")
        if before.get("x-msp-openness") == "open":
            assert after.get("x-msp-openness") == "open", f"{name} was closed"
    assert retyped == _WIDENED[(old_version, new_version)]
    old_enums, new_enums = _enums(old["$defs"], ""), _enums(new["$defs"], "")
    for path, values in old_enums.items():
        assert values <= new_enums[path], f"{path} lost {sorted(values - new_enums[path])}"
    assert {e["code"] for e in old["errors"]} <= {e["code"] for e in new["errors"]}
    old_grants = set(old["capabilities"]["grantable"])
    assert old_grants <= set(new["capabilities"]["grantable"])
