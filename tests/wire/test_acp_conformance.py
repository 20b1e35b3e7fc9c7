"""The ACP goldens checked against an independent oracle: the official ACP Python SDK's models.

``agent-client-protocol`` 0.12.1 (import name ``acp``) is generated from ACP schema 1.19 (its
unstable variant), while muse-acp follows schema 1.25. Every valid ACP golden must validate with
the SDK class named in ``SDK_MODELS`` and dump back to the same JSON. Where the SDK reads a
golden differently because its schema is older, the entry records the reason and what the SDK
writes instead, and the test checks exactly that difference, so a stale exception fails too.
Update kinds the SDK does not know at all (notices, compaction, subagent sessions) must be
refused by it, and are held instead to ``ACP_1_25_FACTS``: the members and requiredness the
official schemas give them, restated here as data so that the spec cannot drift from them.
The Muse extension goldens are not ACP messages; only the ACP content they embed (steering
prompts) is checked here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import acp.schema as sdk
import pytest
from pydantic import BaseModel, ValidationError

from codegen.config import SPEC_DIR
from muse_acp_wire import acp

GOLDEN_DIR: Final = Path(__file__).resolve().parents[1] / "golden"


def _custom_categories_nulled(raw: Any) -> Any:
    """``raw`` with every ``_``-prefixed config option category replaced by null."""
    if isinstance(raw, list):
        return [_custom_categories_nulled(item) for item in raw]
    if not isinstance(raw, dict):
        return raw
    out = {key: _custom_categories_nulled(value) for key, value in raw.items()}
    category = out.get("category")
    if isinstance(category, str) and category.startswith("_"):
        out["category"] = None
    return out


@dataclass(frozen=True, slots=True)
class Lag:
    """A documented way in which the SDK's older schema reads a valid golden differently."""

    reason: str
    sdk_dump: Callable[[Any], Any]
    """Maps the golden to what the SDK writes back after parsing it."""


CUSTOM_CATEGORY: Final = Lag(
    "Schema 1.21 types the catch-all config option category as a string, so `_`-prefixed "
    "custom categories are legal; the SDK's 1.19 models type it as an object and salvage a "
    "custom category string to null instead of failing.",
    _custom_categories_nulled,
)


def _without(*paths: tuple[str, ...]) -> Callable[[Any], Any]:
    """Maps a golden to a copy without the members at ``paths``."""

    def strip(raw: Any) -> Any:
        out = json.loads(json.dumps(raw))
        for path in paths:
            parent = out
            for key in path[:-1]:
                parent = parent[key]
            del parent[path[-1]]
        return out

    return strip


TOOL_NAME = Lag(
    "Schema 1.22 added the tool call `name`; the SDK's 1.19 models lack it and drop it.",
    _without(("update", "name")),
)
OPT_INS = Lag(
    "The client capabilities `session.notices` and `session.compaction` (1.25) and "
    "`subagents` (unstable) are unknown to the SDK's 1.19 models, which drop them.",
    _without(
        ("clientCapabilities", "session", "notices"),
        ("clientCapabilities", "session", "compaction"),
        ("clientCapabilities", "subagents"),
    ),
)
UNKNOWN_TO_SDK: Final = "the SDK's 1.19 models have no such update kind"


@dataclass(frozen=True, slots=True)
class SdkCase:
    model: type[BaseModel]
    lag: Lag | None = None
    refused: str | None = None
    """Why the SDK cannot read the golden at all (it must then refuse it)."""


ACP_1_25_FACTS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    "notice": (frozenset({"severity", "title"}), frozenset({"description", "_meta"})),
    "compaction_update": (
        frozenset({"compactionId", "status"}),
        frozenset({"summary", "error", "_meta"}),
    ),
    "compaction_summary_chunk": (frozenset({"compactionId", "content"}), frozenset({"_meta"})),
    "subagent_update": (
        frozenset({"sessionId"}),
        frozenset({"title", "description", "capabilities", "state", "cwd", "additionalDirectories"})
        | {"_meta"},
    ),
}
"""Per update kind the SDK lacks: (required, optional) members in the official schemas."""


SDK_MODELS: Final[dict[str, SdkCase]] = {
    "authenticate_request": SdkCase(sdk.AuthenticateRequest),
    "authenticate_response": SdkCase(sdk.AuthenticateResponse),
    "cancel_request_integer_id": SdkCase(sdk.CancelRequestNotification),
    "cancel_request_null_id": SdkCase(sdk.CancelRequestNotification),
    "cancel_request_string_id": SdkCase(sdk.CancelRequestNotification),
    "config_option_boolean": SdkCase(sdk.SessionConfigOptionBoolean, CUSTOM_CATEGORY),
    "config_option_select_flat": SdkCase(sdk.SessionConfigOptionSelect),
    "config_option_select_grouped": SdkCase(sdk.SessionConfigOptionSelect),
    "content_block_audio": SdkCase(sdk.AudioContentBlock),
    "content_block_image": SdkCase(sdk.ImageContentBlock),
    "content_block_resource_blob": SdkCase(sdk.EmbeddedResourceContentBlock),
    # The SDK calls the resource_link block ResourceContentBlock and the embedded one
    # EmbeddedResourceContentBlock; muse-acp names both after their `type` tag.
    "content_block_resource_link": SdkCase(sdk.ResourceContentBlock),
    "content_block_resource_text": SdkCase(sdk.EmbeddedResourceContentBlock),
    "content_block_text": SdkCase(sdk.TextContentBlock),
    "elicitation_create_request": SdkCase(sdk.CreateFormSessionElicitationRequest),
    "elicitation_create_response_accept": SdkCase(sdk.AcceptElicitationResponse),
    "elicitation_create_response_cancel": SdkCase(sdk.CancelElicitationResponse),
    "elicitation_create_response_decline": SdkCase(sdk.DeclineElicitationResponse),
    "initialize_request": SdkCase(sdk.InitializeRequest),
    "initialize_request_minimal": SdkCase(sdk.InitializeRequest),
    "initialize_request_opt_ins": SdkCase(sdk.InitializeRequest, OPT_INS),
    "initialize_response": SdkCase(sdk.InitializeResponse),
    "initialize_response_minimal": SdkCase(sdk.InitializeResponse),
    "logout_request": SdkCase(sdk.LogoutRequest),
    "logout_response": SdkCase(sdk.LogoutResponse),
    "request_permission_request": SdkCase(sdk.RequestPermissionRequest),
    "request_permission_response_cancelled": SdkCase(sdk.RequestPermissionResponse),
    "request_permission_response_selected": SdkCase(sdk.RequestPermissionResponse),
    "session_cancel": SdkCase(sdk.CancelNotification),
    "session_close_request": SdkCase(sdk.CloseSessionRequest),
    "session_close_response": SdkCase(sdk.CloseSessionResponse),
    "session_delete_request": SdkCase(sdk.DeleteSessionRequest),
    "session_delete_response": SdkCase(sdk.DeleteSessionResponse),
    "session_fork_request": SdkCase(sdk.ForkSessionRequest),
    "session_fork_response": SdkCase(sdk.ForkSessionResponse),
    "session_list_request": SdkCase(sdk.ListSessionsRequest),
    "session_list_request_empty": SdkCase(sdk.ListSessionsRequest),
    "session_list_response": SdkCase(sdk.ListSessionsResponse),
    "session_list_response_last_page": SdkCase(sdk.ListSessionsResponse),
    "session_load_request": SdkCase(sdk.LoadSessionRequest),
    "session_load_response": SdkCase(sdk.LoadSessionResponse, CUSTOM_CATEGORY),
    "session_load_response_empty": SdkCase(sdk.LoadSessionResponse),
    "session_new_request": SdkCase(sdk.NewSessionRequest),
    "session_new_request_additional_directories": SdkCase(sdk.NewSessionRequest),
    "session_new_response": SdkCase(sdk.NewSessionResponse, CUSTOM_CATEGORY),
    "session_prompt_request": SdkCase(sdk.PromptRequest),
    "session_prompt_response": SdkCase(sdk.PromptResponse),
    "session_prompt_response_cancelled": SdkCase(sdk.PromptResponse),
    "session_resume_request": SdkCase(sdk.ResumeSessionRequest),
    "session_resume_response": SdkCase(sdk.ResumeSessionResponse),
    # muse-acp keeps one params model for both shapes; the SDK splits them by value type.
    "session_set_config_option_request_boolean": SdkCase(sdk.SetSessionConfigOptionBooleanRequest),
    "session_set_config_option_request_select": SdkCase(sdk.SetSessionConfigOptionSelectRequest),
    "session_set_config_option_response": SdkCase(
        sdk.SetSessionConfigOptionResponse, CUSTOM_CATEGORY
    ),
    "session_set_mode_request": SdkCase(sdk.SetSessionModeRequest),
    "session_set_mode_response": SdkCase(sdk.SetSessionModeResponse),
    "session_update_agent_message_chunk": SdkCase(sdk.SessionNotification),
    "session_update_agent_thought_chunk": SdkCase(sdk.SessionNotification),
    "session_update_available_commands_update": SdkCase(sdk.SessionNotification),
    "session_update_compaction_summary_chunk": SdkCase(
        sdk.SessionNotification, refused=UNKNOWN_TO_SDK
    ),
    "session_update_compaction_update": SdkCase(sdk.SessionNotification, refused=UNKNOWN_TO_SDK),
    "session_update_compaction_update_failed": SdkCase(
        sdk.SessionNotification, refused=UNKNOWN_TO_SDK
    ),
    "session_update_config_option_update": SdkCase(sdk.SessionNotification, CUSTOM_CATEGORY),
    "session_update_current_mode_update": SdkCase(sdk.SessionNotification),
    "session_update_plan": SdkCase(sdk.SessionNotification),
    "session_update_notice": SdkCase(sdk.SessionNotification, refused=UNKNOWN_TO_SDK),
    "session_update_plan_empty": SdkCase(sdk.SessionNotification),
    "session_update_plan_removed": SdkCase(sdk.SessionNotification),
    "session_update_plan_update_items": SdkCase(sdk.SessionNotification),
    "session_update_plan_update_markdown": SdkCase(sdk.SessionNotification),
    "session_update_session_info_update": SdkCase(sdk.SessionNotification),
    "session_update_session_info_update_clear": SdkCase(sdk.SessionNotification),
    "session_update_session_info_update_meta_only": SdkCase(sdk.SessionNotification),
    "session_update_subagent_update": SdkCase(sdk.SessionNotification, refused=UNKNOWN_TO_SDK),
    "session_update_tool_call": SdkCase(sdk.SessionNotification),
    "session_update_tool_call_named": SdkCase(sdk.SessionNotification, TOOL_NAME),
    "session_update_tool_call_update": SdkCase(sdk.SessionNotification),
    "session_update_tool_call_update_meta_only": SdkCase(sdk.SessionNotification),
    "session_update_tool_call_update_named": SdkCase(sdk.SessionNotification, TOOL_NAME),
    "session_update_usage_update": SdkCase(sdk.SessionNotification),
    "session_update_usage_update_without_cost": SdkCase(sdk.SessionNotification),
    "session_update_user_message_chunk": SdkCase(sdk.SessionNotification),
    "tool_call_content_content": SdkCase(sdk.ContentToolCallContent),
    "tool_call_content_diff": SdkCase(sdk.FileEditToolCallContent),
    "tool_call_content_diff_new_file": SdkCase(sdk.FileEditToolCallContent),
    "tool_call_content_terminal": SdkCase(sdk.TerminalToolCallContent),
}
"""Every valid ACP golden, by file stem, and the SDK model that must read it."""


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def test_every_valid_acp_golden_has_an_sdk_model() -> None:
    stems = {path.stem for path in (GOLDEN_DIR / "acp" / "valid").glob("*.json")}
    assert stems == set(SDK_MODELS)


@pytest.mark.parametrize(("stem", "case"), sorted(SDK_MODELS.items()))
def test_valid_acp_golden_reads_the_same_with_the_sdk(stem: str, case: SdkCase) -> None:
    raw = _load(GOLDEN_DIR / "acp" / "valid" / f"{stem}.json")
    if case.refused is not None:
        with pytest.raises(ValidationError):
            case.model.model_validate(raw)
        return
    expected = raw if case.lag is None else case.lag.sdk_dump(raw)
    if case.lag is not None:
        assert expected != raw, f"{stem}: the recorded SDK lag no longer applies"
    assert _dump(case.model.model_validate(raw)) == expected


def test_update_kinds_the_sdk_lacks_have_the_members_of_acp_1_25() -> None:
    spec = _load(SPEC_DIR / "acp" / "acp.schema.json")
    updates = spec["$defs"]["SessionUpdate"]["oneOf"]
    variants = {v["properties"]["sessionUpdate"]["const"]: v for v in updates}
    refused = {
        _load(GOLDEN_DIR / "acp" / "valid" / f"{stem}.json")["update"]["sessionUpdate"]
        for stem, case in SDK_MODELS.items()
        if case.refused is not None
    }
    assert refused == set(ACP_1_25_FACTS)
    for kind, (required, optional) in ACP_1_25_FACTS.items():
        variant = variants[kind]
        assert set(variant["required"]) == required | {"sessionUpdate"}, kind
        assert set(variant["properties"]) == required | optional | {"sessionUpdate"}, kind
        model = acp.SESSION_UPDATE_VARIANTS[kind]
        aliases = {f.alias or name for name, f in model.model_fields.items()}
        assert aliases == required | optional | {"sessionUpdate"}, kind


def _extension_prompts() -> list[tuple[str, Any]]:
    goldens = sorted((GOLDEN_DIR / "extensions" / "valid").glob("*.json"))
    return [(path.stem, raw) for path in goldens if "prompt" in (raw := _load(path))]


def test_some_extension_goldens_embed_prompts() -> None:
    assert {stem for stem, _ in _extension_prompts()} >= {
        "steer_request",
        "session_steering_request",
    }


@pytest.mark.parametrize(("stem", "raw"), _extension_prompts())
def test_extension_prompt_is_a_valid_acp_prompt_for_the_sdk(stem: str, raw: Any) -> None:
    request = {"sessionId": raw["sessionId"], "prompt": raw["prompt"]}
    assert _dump(sdk.PromptRequest.model_validate(request)) == request, stem
