"""Golden ACP and Muse-extension messages against the generated ``muse_acp_wire.acp`` models.

Each file under ``tests/golden/acp`` and ``tests/golden/extensions`` is one params or result
object, or one member of a tagged union (a content block, a config option, a tool-call content),
registered below with its model. A file under ``valid/`` must validate and dump back to the same
JSON; a file under ``invalid/`` must be refused. The other tests pin the method tables, the
tolerance of unknown members, the coverage of every update kind and content type, and that the
Muse ``_meta`` entries shown inside ACP examples fit the extension models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
from pydantic import ValidationError

from muse_acp_wire import acp
from muse_acp_wire._base import NotificationSpec, RequestSpec, WireModel

GOLDEN_DIR: Final = Path(__file__).resolve().parents[1] / "golden"
FAMILIES: Final = ("acp", "extensions")

ACP_VALID: Final[dict[str, type[WireModel]]] = {
    "authenticate_request": acp.AuthenticateRequest,
    "authenticate_response": acp.AuthenticateResponse,
    "cancel_request_integer_id": acp.CancelRequestNotification,
    "cancel_request_null_id": acp.CancelRequestNotification,
    "cancel_request_string_id": acp.CancelRequestNotification,
    "config_option_boolean": acp.BooleanSessionConfigOption,
    "config_option_select_flat": acp.SelectSessionConfigOption,
    "config_option_select_grouped": acp.SelectSessionConfigOption,
    "content_block_audio": acp.AudioContentBlock,
    "content_block_image": acp.ImageContentBlock,
    "content_block_resource_blob": acp.ResourceContentBlock,
    "content_block_resource_link": acp.ResourceLinkContentBlock,
    "content_block_resource_text": acp.ResourceContentBlock,
    "content_block_text": acp.TextContentBlock,
    "elicitation_create_request": acp.CreateElicitationRequest,
    "elicitation_create_response_accept": acp.CreateElicitationResponse,
    "elicitation_create_response_cancel": acp.CreateElicitationResponse,
    "elicitation_create_response_decline": acp.CreateElicitationResponse,
    "initialize_request": acp.InitializeRequest,
    "initialize_request_minimal": acp.InitializeRequest,
    "initialize_request_opt_ins": acp.InitializeRequest,
    "initialize_response": acp.InitializeResponse,
    "initialize_response_minimal": acp.InitializeResponse,
    "logout_request": acp.LogoutRequest,
    "logout_response": acp.LogoutResponse,
    "request_permission_request": acp.RequestPermissionRequest,
    "request_permission_response_cancelled": acp.RequestPermissionResponse,
    "request_permission_response_selected": acp.RequestPermissionResponse,
    "session_cancel": acp.CancelNotification,
    "session_close_request": acp.CloseSessionRequest,
    "session_close_response": acp.CloseSessionResponse,
    "session_delete_request": acp.DeleteSessionRequest,
    "session_delete_response": acp.DeleteSessionResponse,
    "session_fork_request": acp.ForkSessionRequest,
    "session_fork_response": acp.ForkSessionResponse,
    "session_list_request": acp.ListSessionsRequest,
    "session_list_request_empty": acp.ListSessionsRequest,
    "session_list_response": acp.ListSessionsResponse,
    "session_list_response_last_page": acp.ListSessionsResponse,
    "session_load_request": acp.LoadSessionRequest,
    "session_load_response": acp.LoadSessionResponse,
    "session_load_response_empty": acp.LoadSessionResponse,
    "session_new_request": acp.NewSessionRequest,
    "session_new_request_additional_directories": acp.NewSessionRequest,
    "session_new_response": acp.NewSessionResponse,
    "session_prompt_request": acp.PromptRequest,
    "session_prompt_response": acp.PromptResponse,
    "session_prompt_response_cancelled": acp.PromptResponse,
    "session_resume_request": acp.ResumeSessionRequest,
    "session_resume_response": acp.ResumeSessionResponse,
    "session_set_config_option_request_boolean": acp.SetSessionConfigOptionRequest,
    "session_set_config_option_request_select": acp.SetSessionConfigOptionRequest,
    "session_set_config_option_response": acp.SetSessionConfigOptionResponse,
    "session_set_mode_request": acp.SetSessionModeRequest,
    "session_set_mode_response": acp.SetSessionModeResponse,
    "session_update_agent_message_chunk": acp.SessionNotification,
    "session_update_agent_thought_chunk": acp.SessionNotification,
    "session_update_available_commands_update": acp.SessionNotification,
    "session_update_compaction_summary_chunk": acp.SessionNotification,
    "session_update_compaction_update": acp.SessionNotification,
    "session_update_compaction_update_failed": acp.SessionNotification,
    "session_update_config_option_update": acp.SessionNotification,
    "session_update_current_mode_update": acp.SessionNotification,
    "session_update_plan": acp.SessionNotification,
    "session_update_notice": acp.SessionNotification,
    "session_update_plan_empty": acp.SessionNotification,
    "session_update_plan_removed": acp.SessionNotification,
    "session_update_plan_update_items": acp.SessionNotification,
    "session_update_plan_update_markdown": acp.SessionNotification,
    "session_update_session_info_update": acp.SessionNotification,
    "session_update_session_info_update_clear": acp.SessionNotification,
    "session_update_session_info_update_meta_only": acp.SessionNotification,
    "session_update_subagent_update": acp.SessionNotification,
    "session_update_tool_call": acp.SessionNotification,
    "session_update_tool_call_named": acp.SessionNotification,
    "session_update_tool_call_update": acp.SessionNotification,
    "session_update_tool_call_update_meta_only": acp.SessionNotification,
    "session_update_tool_call_update_named": acp.SessionNotification,
    "session_update_usage_update": acp.SessionNotification,
    "session_update_usage_update_without_cost": acp.SessionNotification,
    "session_update_user_message_chunk": acp.SessionNotification,
    "tool_call_content_content": acp.ContentToolCallContent,
    "tool_call_content_diff": acp.DiffToolCallContent,
    "tool_call_content_diff_new_file": acp.DiffToolCallContent,
    "tool_call_content_terminal": acp.TerminalToolCallContent,
}
"""ACP messages muse-acp must parse and write back unchanged."""

ACP_INVALID: Final[dict[str, type[WireModel]]] = {
    "authenticate_request_missing_method_id": acp.AuthenticateRequest,
    "cancel_request_missing_request_id": acp.CancelRequestNotification,
    "cancel_request_object_id": acp.CancelRequestNotification,
    "config_option_boolean_text_value": acp.BooleanSessionConfigOption,
    "config_option_boolean_wrong_tag": acp.BooleanSessionConfigOption,
    "config_option_select_missing_current_value": acp.SelectSessionConfigOption,
    "content_block_annotations_unknown_role": acp.TextContentBlock,
    "content_block_image_missing_mime_type": acp.ImageContentBlock,
    "content_block_resource_without_contents": acp.ResourceContentBlock,
    "content_block_text_missing_text": acp.TextContentBlock,
    "content_block_text_wrong_tag": acp.TextContentBlock,
    "elicitation_create_request_missing_schema": acp.CreateElicitationRequest,
    "elicitation_create_request_unknown_field_type": acp.CreateElicitationRequest,
    "elicitation_create_request_url_mode": acp.CreateElicitationRequest,
    "elicitation_create_response_bad_action": acp.CreateElicitationResponse,
    "initialize_request_missing_protocol_version": acp.InitializeRequest,
    "initialize_request_protocol_version_too_large": acp.InitializeRequest,
    "initialize_request_text_protocol_version": acp.InitializeRequest,
    "initialize_response_auth_method_without_id": acp.InitializeResponse,
    "request_permission_request_bad_option_kind": acp.RequestPermissionRequest,
    "request_permission_request_missing_tool_call_id": acp.RequestPermissionRequest,
    "request_permission_response_selected_without_option": acp.RequestPermissionResponse,
    "request_permission_response_unknown_outcome": acp.RequestPermissionResponse,
    "session_cancel_missing_session_id": acp.CancelNotification,
    "session_close_request_missing_session_id": acp.CloseSessionRequest,
    "session_delete_request_missing_session_id": acp.DeleteSessionRequest,
    "session_fork_request_missing_cwd": acp.ForkSessionRequest,
    "session_list_response_missing_sessions": acp.ListSessionsResponse,
    "session_list_response_row_missing_cwd": acp.ListSessionsResponse,
    "session_load_request_missing_cwd": acp.LoadSessionRequest,
    "session_new_request_missing_mcp_servers": acp.NewSessionRequest,
    "session_new_request_unknown_mcp_transport": acp.NewSessionRequest,
    "session_new_response_missing_session_id": acp.NewSessionResponse,
    "session_prompt_request_prompt_not_a_list": acp.PromptRequest,
    "session_prompt_request_unknown_block_type": acp.PromptRequest,
    "session_prompt_response_unknown_stop_reason": acp.PromptResponse,
    "session_set_config_option_request_object_value": acp.SetSessionConfigOptionRequest,
    "session_set_config_option_request_unknown_type": acp.SetSessionConfigOptionRequest,
    "session_set_config_option_response_missing_options": acp.SetSessionConfigOptionResponse,
    "session_update_agent_message_chunk_missing_content": acp.SessionNotification,
    "session_update_available_commands_missing_description": acp.SessionNotification,
    "session_update_missing_kind": acp.SessionNotification,
    "session_update_missing_session_id": acp.SessionNotification,
    "session_update_notice_bad_severity": acp.SessionNotification,
    "session_update_notice_empty_title": acp.SessionNotification,
    "session_update_plan_bad_priority": acp.SessionNotification,
    "session_update_plan_update_missing_plan_id": acp.SessionNotification,
    "session_update_subagent_update_missing_session_id": acp.SessionNotification,
    "session_update_tool_call_bad_kind": acp.SessionNotification,
    "session_update_tool_call_bad_status": acp.SessionNotification,
    "session_update_tool_call_missing_title": acp.SessionNotification,
    "session_update_tool_call_negative_line": acp.SessionNotification,
    "session_update_unknown_kind": acp.SessionNotification,
    "session_update_usage_update_missing_size": acp.SessionNotification,
    "session_update_usage_update_negative_used": acp.SessionNotification,
    "tool_call_content_diff_missing_new_text": acp.DiffToolCallContent,
    "tool_call_content_terminal_wrong_tag": acp.TerminalToolCallContent,
}
"""ACP messages the models must refuse."""

EXTENSIONS_VALID: Final[dict[str, type[WireModel]]] = {
    "agent_meta": acp.MuseAgentMeta,
    "agent_meta_backend": acp.MuseAgentMeta,
    "client_capabilities_meta": acp.MuseClientCapabilitiesMeta,
    "client_capabilities_meta_bare_steering": acp.MuseClientCapabilitiesMeta,
    "client_capabilities_meta_none": acp.MuseClientCapabilitiesMeta,
    "jetbrains_agent_meta": acp.JetbrainsAgentMeta,
    "jetbrains_client_capabilities_meta": acp.JetbrainsClientCapabilitiesMeta,
    "jetbrains_prompt_meta": acp.JetbrainsPromptRequestMeta,
    "jetbrains_session_info_reported": acp.JetbrainsSessionInfoMeta,
    "jetbrains_session_info_unavailable": acp.JetbrainsSessionInfoMeta,
    "output_reference_available": acp.MuseOutputReference,
    "output_reference_missing": acp.MuseOutputReference,
    "output_reference_unknown_availability": acp.MuseOutputReference,
    "read_output_request": acp.MuseReadOutputRequest,
    "read_output_request_defaults": acp.MuseReadOutputRequest,
    "read_output_request_limits": acp.MuseReadOutputRequest,
    "read_output_response_base64": acp.MuseReadOutputResponse,
    "read_output_response_empty_eof": acp.MuseReadOutputResponse,
    "read_output_response_utf8_eof": acp.MuseReadOutputResponse,
    "session_info_meta_active": acp.MuseSessionInfoMeta,
    "session_info_meta_ended": acp.MuseSessionInfoMeta,
    "session_steering_request": acp.SessionSteeringRequest,
    "session_steering_request_minimal": acp.SessionSteeringRequest,
    "session_steering_request_unknown_idle_behavior": acp.SessionSteeringRequest,
    "session_steering_response_injected": acp.SessionSteeringResponse,
    "session_steering_response_prompt_required": acp.SessionSteeringResponse,
    "steer_request": acp.MuseSteerRequest,
    "steer_response": acp.MuseSteerResponse,
    "task_request": acp.MuseTaskRequest,
    "task_response": acp.MuseTaskResponse,
    "task_response_noop": acp.MuseTaskResponse,
}
"""Muse extension messages and `_meta` entries that must round-trip."""

EXTENSIONS_INVALID: Final[dict[str, type[WireModel]]] = {
    "agent_meta_read_limit_too_large": acp.MuseAgentMeta,
    "agent_meta_unknown_backend": acp.MuseAgentMeta,
    "agent_meta_wrong_method": acp.MuseAgentMeta,
    "client_capabilities_meta_text_steering": acp.MuseClientCapabilitiesMeta,
    "client_capabilities_meta_zero_version": acp.MuseClientCapabilitiesMeta,
    "jetbrains_report_request_bad_id": acp.JetbrainsFileChangeReportRequest,
    "jetbrains_report_request_extra_member": acp.JetbrainsFileChangeReportRequest,
    "jetbrains_session_info_complete": acp.JetbrainsSessionInfoMeta,
    "jetbrains_session_info_unknown_reason": acp.JetbrainsSessionInfoMeta,
    "output_reference_missing_availability": acp.MuseOutputReference,
    "output_reference_negative_byte_len": acp.MuseOutputReference,
    "read_output_request_empty_item_id": acp.MuseReadOutputRequest,
    "read_output_request_fractional_length": acp.MuseReadOutputRequest,
    "read_output_request_length_too_large": acp.MuseReadOutputRequest,
    "read_output_request_length_zero": acp.MuseReadOutputRequest,
    "read_output_request_long_output_ref": acp.MuseReadOutputRequest,
    "read_output_request_missing_output_ref": acp.MuseReadOutputRequest,
    "read_output_request_negative_offset": acp.MuseReadOutputRequest,
    "read_output_request_offset_beyond_safe_integer": acp.MuseReadOutputRequest,
    "read_output_response_bad_encoding": acp.MuseReadOutputResponse,
    "read_output_response_byte_len_too_large": acp.MuseReadOutputResponse,
    "read_output_response_missing_eof": acp.MuseReadOutputResponse,
    "session_info_meta_empty_turn_id": acp.MuseSessionInfoMeta,
    "session_steering_request_empty_prompt": acp.SessionSteeringRequest,
    "session_steering_request_missing_prompt": acp.SessionSteeringRequest,
    "session_steering_response_bad_outcome": acp.SessionSteeringResponse,
    "session_steering_response_unknown_reason": acp.SessionSteeringResponse,
    "steer_request_empty_prompt": acp.MuseSteerRequest,
    "steer_request_empty_session_id": acp.MuseSteerRequest,
    "steer_request_missing_expected_turn_id": acp.MuseSteerRequest,
    "steer_request_unknown_block_type": acp.MuseSteerRequest,
    "steer_response_bad_status": acp.MuseSteerResponse,
    "task_request_unknown_action": acp.MuseTaskRequest,
    "task_response_unknown_kind": acp.MuseTaskResponse,
}
"""Muse extension messages the models must refuse."""

GOLDENS: Final[dict[str, type[WireModel]]] = {
    f"{family}/{kind}/{stem}.json": model
    for family, kind, table in (
        ("acp", "valid", ACP_VALID),
        ("acp", "invalid", ACP_INVALID),
        ("extensions", "valid", EXTENSIONS_VALID),
        ("extensions", "invalid", EXTENSIONS_INVALID),
    )
    for stem, model in table.items()
}
"""Every golden file, by its path under tests/golden, and the model that must (not) parse it."""

EXPECTED_AGENT_REQUESTS: Final[dict[str, tuple[type[WireModel], type[WireModel]]]] = {
    "initialize": (acp.InitializeRequest, acp.InitializeResponse),
    "authenticate": (acp.AuthenticateRequest, acp.AuthenticateResponse),
    "logout": (acp.LogoutRequest, acp.LogoutResponse),
    "session/new": (acp.NewSessionRequest, acp.NewSessionResponse),
    "session/load": (acp.LoadSessionRequest, acp.LoadSessionResponse),
    "session/list": (acp.ListSessionsRequest, acp.ListSessionsResponse),
    "session/resume": (acp.ResumeSessionRequest, acp.ResumeSessionResponse),
    "session/close": (acp.CloseSessionRequest, acp.CloseSessionResponse),
    "session/delete": (acp.DeleteSessionRequest, acp.DeleteSessionResponse),
    "session/fork": (acp.ForkSessionRequest, acp.ForkSessionResponse),
    "session/set_mode": (acp.SetSessionModeRequest, acp.SetSessionModeResponse),
    "session/set_config_option": (
        acp.SetSessionConfigOptionRequest,
        acp.SetSessionConfigOptionResponse,
    ),
    "session/prompt": (acp.PromptRequest, acp.PromptResponse),
    "_muse/readOutput": (acp.MuseReadOutputRequest, acp.MuseReadOutputResponse),
    "_muse/steer": (acp.MuseSteerRequest, acp.MuseSteerResponse),
    "_muse/task": (acp.MuseTaskRequest, acp.MuseTaskResponse),
    "_session/steering": (acp.SessionSteeringRequest, acp.SessionSteeringResponse),
}
EXPECTED_CLIENT_REQUESTS: Final[dict[str, tuple[type[WireModel], type[WireModel]]]] = {
    "session/request_permission": (acp.RequestPermissionRequest, acp.RequestPermissionResponse),
    "elicitation/create": (acp.CreateElicitationRequest, acp.CreateElicitationResponse),
}
EXPECTED_AGENT_NOTIFICATIONS: Final[dict[str, type[WireModel]]] = {
    "session/cancel": acp.CancelNotification,
    "$/cancel_request": acp.CancelRequestNotification,
}
EXPECTED_CLIENT_NOTIFICATIONS: Final[dict[str, type[WireModel]]] = {
    "session/update": acp.SessionNotification,
}

SESSION_UPDATE_KINDS: Final = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "plan_update",
        "plan_removed",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
        "notice",
        "compaction_update",
        "compaction_summary_chunk",
        "subagent_update",
    }
)
CONTENT_BLOCK_TYPES: Final = frozenset({"text", "image", "audio", "resource_link", "resource"})
TOOL_CALL_CONTENT_TYPES: Final = frozenset({"content", "diff", "terminal"})


def _load(relative: str) -> Any:
    return json.loads((GOLDEN_DIR / relative).read_text(encoding="utf-8"))


def _dump(model: WireModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _registered(kind: str) -> list[tuple[str, type[WireModel]]]:
    return sorted((path, model) for path, model in GOLDENS.items() if f"/{kind}/" in path)


def _valid_payloads(model: type[WireModel]) -> list[Any]:
    return [_load(path) for path, registered in _registered("valid") if registered is model]


def test_registry_lists_exactly_the_golden_files() -> None:
    on_disk = {
        path.relative_to(GOLDEN_DIR).as_posix()
        for family in FAMILIES
        for path in (GOLDEN_DIR / family).rglob("*.json")
    }
    assert on_disk == set(GOLDENS)


@pytest.mark.parametrize(("path", "model"), _registered("valid"))
def test_valid_golden_validates_and_round_trips(path: str, model: type[WireModel]) -> None:
    raw = _load(path)
    assert _dump(model.model_validate(raw)) == raw


@pytest.mark.parametrize(("path", "model"), _registered("invalid"))
def test_invalid_golden_fails_validation(path: str, model: type[WireModel]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(_load(path))


@pytest.mark.parametrize(("path", "model"), _registered("valid"))
def test_unknown_top_level_members_are_ignored_rather_than_rejected(
    path: str, model: type[WireModel]
) -> None:
    raw = _load(path)
    assert _dump(model.model_validate({**raw, "addedByANewerPeer": {"x": 1}})) == raw


def _table(specs: Any) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for method, spec in specs.items():
        assert spec.method == method
        if isinstance(spec, RequestSpec):
            assert spec.command is False
            rows[method] = (spec.params, spec.result)
        else:
            assert isinstance(spec, NotificationSpec)
            rows[method] = spec.params
    return rows


def test_method_tables_hold_exactly_the_expected_methods_and_models() -> None:
    assert _table(acp.AGENT_REQUESTS) == EXPECTED_AGENT_REQUESTS
    assert _table(acp.CLIENT_REQUESTS) == EXPECTED_CLIENT_REQUESTS
    assert _table(acp.AGENT_NOTIFICATIONS) == EXPECTED_AGENT_NOTIFICATIONS
    assert _table(acp.CLIENT_NOTIFICATIONS) == EXPECTED_CLIENT_NOTIFICATIONS


def test_method_tables_are_read_only() -> None:
    with pytest.raises(TypeError):
        acp.AGENT_REQUESTS["session/erase"] = acp.AGENT_REQUESTS["session/close"]  # type: ignore[index]


def test_every_method_has_valid_golden_params_and_results() -> None:
    models: list[type[WireModel]] = [
        *(model for pair in EXPECTED_AGENT_REQUESTS.values() for model in pair),
        *(model for pair in EXPECTED_CLIENT_REQUESTS.values() for model in pair),
        *EXPECTED_AGENT_NOTIFICATIONS.values(),
        *EXPECTED_CLIENT_NOTIFICATIONS.values(),
    ]
    assert [model.__name__ for model in models if not _valid_payloads(model)] == []


def test_goldens_cover_every_update_kind_content_block_and_tool_call_content() -> None:
    updates = [raw["update"] for raw in _valid_payloads(acp.SessionNotification)]
    assert {update["sessionUpdate"] for update in updates} == SESSION_UPDATE_KINDS
    blocks = [block for raw in _valid_payloads(acp.PromptRequest) for block in raw["prompt"]]
    assert {block["type"] for block in blocks} == CONTENT_BLOCK_TYPES
    assert all("annotations" in block and "_meta" in block for block in blocks)
    contents = [
        content
        for update in updates
        if update["sessionUpdate"] == "tool_call"
        for content in update.get("content", [])
    ]
    assert {content["type"] for content in contents} == TOOL_CALL_CONTENT_TYPES


def test_session_update_variants_parse_into_their_named_classes() -> None:
    parsed = [
        acp.SessionNotification.model_validate(raw).update
        for raw in _valid_payloads(acp.SessionNotification)
    ]
    assert {type(update).__name__ for update in parsed} == {
        "".join(word.capitalize() for word in kind.split("_")) + "SessionUpdate"
        for kind in SESSION_UPDATE_KINDS
    }


def test_clearing_session_info_writes_explicit_nulls() -> None:
    raw = _load("acp/valid/session_update_session_info_update_clear.json")
    update = acp.SessionNotification.model_validate(raw).update
    assert isinstance(update, acp.SessionInfoUpdateSessionUpdate)
    assert _dump(update) == {
        "sessionUpdate": "session_info_update",
        "title": None,
        "updatedAt": None,
    }


def test_read_output_defaults_match_the_documented_window() -> None:
    params = acp.MuseReadOutputRequest.model_validate(
        _load("extensions/valid/read_output_request_defaults.json")
    )
    assert (params.offset_bytes, params.length_bytes) == (0, 65536)


def test_muse_meta_inside_acp_examples_fits_the_extension_models() -> None:
    opt_ins = _load("acp/valid/initialize_request.json")["clientCapabilities"]["_meta"]
    advertised = _load("acp/valid/initialize_response.json")["_meta"]
    tool_card = _load("acp/valid/session_update_tool_call.json")["update"]["_meta"]
    info = _load("acp/valid/session_update_session_info_update_meta_only.json")["update"]["_meta"]
    pairs: list[tuple[type[WireModel], Any]] = [
        (acp.MuseClientCapabilitiesMeta, opt_ins),
        (acp.MuseAgentMeta, advertised),
        (acp.MuseOutputReference, tool_card["muse/output"]),
        (acp.MuseSessionInfoMeta, info),
    ]
    for model, raw in pairs:
        assert _dump(model.model_validate(raw)) == raw
