"""Session settings as ACP modes and config options, and checked when a client changes them."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import acp.schema as sdk
import pytest

from muse_acp.agent.options.config_options import (
    EFFORTS,
    MODES,
    ModelCatalog,
    ModelChoice,
    SessionSettings,
    apply_config_option,
    apply_mode,
    config_options,
    host_flags,
    session_modes,
    turn_effort,
)
from muse_acp.rpc.errors import INVALID_PARAMS, RpcError
from muse_acp_wire import acp, msp


def _row(model_id: str, provider_id: str | None, *, default: bool = False) -> dict[str, Any]:
    return {
        "modelId": model_id,
        "displayLabel": model_id.replace("-", " ").title(),
        "providerId": provider_id,
        "profileId": None,
        "releaseDate": None,
        "description": None,
        "contextLimit": None,
        "outputLimit": None,
        "cost": None,
        "isActive": False,
        "isDefault": default,
    }


def _catalog(*rows: dict[str, Any]) -> ModelCatalog:
    result = msp.ModelListResult.model_validate({"source": "providerCatalog", "models": rows})
    return ModelCatalog.from_result(result)


CATALOG = _catalog(
    _row("spark-1", "meta", default=True),
    _row("spark-2", "meta"),
    _row("open-9", "meta"),
    _row("open-9", "gateway"),
    _row("spark-1", "meta"),
)


def _wire(options: list[acp.SelectSessionConfigOption]) -> list[dict[str, Any]]:
    """The options' JSON, checked to round-trip and to be read alike by the official SDK."""
    raw = [option.model_dump(mode="json", by_alias=True, exclude_unset=True) for option in options]
    response = acp.SetSessionConfigOptionResponse.model_validate({"configOptions": raw})
    assert (
        response.model_dump(mode="json", by_alias=True, exclude_unset=True)["configOptions"] == raw
    )
    for item in raw:
        oracle = sdk.SessionConfigOptionSelect.model_validate(item)
        assert oracle.model_dump(mode="json", by_alias=True, exclude_unset=True) == item
    return raw


def _menu(settings: SessionSettings, catalog: ModelCatalog | None) -> dict[str, Any]:
    return _wire(config_options(settings, catalog))[1]


ASK = "Muse asks before actions that need approval; you decide each one in the client."
READ_ONLY = "Muse cannot write files or run shell commands; other approvals are still asked."
PLAN = "Muse plans without writing files or running commands; leave it by choosing another mode."
AUTO_APPROVE = "Each approval is granted once with the allow choice Muse offers, without asking."
AUTO_REJECT = "Each approval is refused once with the deny choice Muse offers, without asking."
MODE_VALUES = [
    {"value": "default", "name": "Ask", "description": ASK},
    {"value": "readOnly", "name": "Read-only", "description": READ_ONLY},
    {"value": "plan", "name": "Plan", "description": PLAN},
    {"value": "autoApprove", "name": "Auto-approve", "description": AUTO_APPROVE},
    {"value": "autoReject", "name": "Auto-reject", "description": AUTO_REJECT},
]
MODE_OPTION = {
    "type": "select",
    "id": "mode",
    "name": "Mode",
    "category": "mode",
    "currentValue": "readOnly",
    "options": MODE_VALUES,
}
EFFORT_OPTION = {
    "type": "select",
    "id": "reasoningEffort",
    "name": "Reasoning effort",
    "category": "thought_level",
    "currentValue": "high",
    "options": [
        {"value": "default", "name": "Muse default"},
        {"value": "none", "name": "None"},
        {"value": "minimal", "name": "Minimal"},
        {"value": "low", "name": "Low"},
        {"value": "medium", "name": "Medium"},
        {"value": "high", "name": "High"},
        {"value": "xhigh", "name": "Extra high"},
        {"value": "max", "name": "Max"},
        {"value": "ultra", "name": "Ultra"},
    ],
}


def test_options_come_in_the_order_mode_model_effort() -> None:
    settings = SessionSettings(mode_id="readOnly", effort="high")
    assert _wire(config_options(settings, None)) == [
        MODE_OPTION,
        {
            "type": "select",
            "id": "model",
            "name": "Model",
            "category": "model",
            "currentValue": "default",
            "options": [{"value": "default", "name": "Muse default model"}],
        },
        EFFORT_OPTION,
    ]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        pytest.param(
            ModelChoice("spark-2", "meta"),
            {
                "currentValue": "meta/spark-2",
                "options": [{"value": "meta/spark-2", "name": "spark-2"}],
            },
            id="a chosen model",
        ),
        pytest.param(
            ModelChoice("spark-2"),
            {"currentValue": "spark-2", "options": [{"value": "spark-2", "name": "spark-2"}]},
            id="a chosen model without provider",
        ),
    ],
)
def test_before_a_catalog_the_model_menu_holds_only_the_current_model(
    model: ModelChoice, expected: dict[str, Any]
) -> None:
    menu = _menu(SessionSettings(model=model), None)
    assert {key: menu[key] for key in ("currentValue", "options")} == expected


CATALOG_VALUES = [
    {"value": "default", "name": "Muse default model (Spark 1)"},
    {"value": "spark-1", "name": "Spark 1"},
    {"value": "spark-2", "name": "Spark 2"},
    {"value": "meta/open-9", "name": "Open 9 (meta)"},
    {"value": "gateway/open-9", "name": "Open 9 (gateway)"},
]


@pytest.mark.parametrize(
    ("model", "current", "extra"),
    [
        pytest.param(None, "default", [], id="the host default"),
        pytest.param(ModelChoice("spark-2", "meta"), "spark-2", [], id="a listed model"),
        pytest.param(ModelChoice("spark-2"), "spark-2", [], id="a listed model without provider"),
        pytest.param(
            ModelChoice("open-9", "gateway"), "gateway/open-9", [], id="an ambiguous model id"
        ),
        pytest.param(
            ModelChoice("retired-3", "meta"),
            "meta/retired-3",
            [
                {
                    "value": "meta/retired-3",
                    "name": "retired-3",
                    "description": "Not in Muse's current model list.",
                }
            ],
            id="a current model the catalog lacks",
        ),
        pytest.param(
            ModelChoice("open-9"),
            "open-9",
            [
                {
                    "value": "open-9",
                    "name": "open-9",
                    "description": "Not in Muse's current model list.",
                }
            ],
            id="an ambiguous model id without provider",
        ),
    ],
)
def test_with_a_catalog_the_model_menu_lists_it_and_always_the_current_model(
    model: ModelChoice | None, current: str, extra: list[dict[str, Any]]
) -> None:
    menu = _menu(SessionSettings(model=model), CATALOG)
    assert menu["currentValue"] == current
    assert menu["options"] == CATALOG_VALUES + extra


def test_the_catalog_knows_its_default_model() -> None:
    assert CATALOG.default_model == ModelChoice("spark-1", "meta")
    assert _catalog(_row("spark-1", "meta")).default_model is None


def test_an_empty_catalog_offers_the_host_default() -> None:
    menu = _menu(SessionSettings(), _catalog())
    assert menu["options"] == [{"value": "default", "name": "Muse default model"}]


def test_session_modes_list_every_mode_with_the_current_one() -> None:
    state = session_modes(SessionSettings(mode_id="autoReject"))
    raw = state.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert (
        sdk.SessionModeState.model_validate(raw).model_dump(
            mode="json", by_alias=True, exclude_unset=True
        )
        == raw
    )
    assert raw == {
        "currentModeId": "autoReject",
        "availableModes": [
            {"id": o["value"], "name": o["name"], "description": o["description"]}
            for o in MODE_VALUES
        ],
    }


@pytest.mark.parametrize(
    ("config_id", "value", "change"),
    [
        ("mode", "autoApprove", {"mode_id": "autoApprove"}),
        ("model", "gateway/open-9", {"model": ModelChoice("open-9", "gateway")}),
        ("model", "spark-2", {"model": ModelChoice("spark-2", "meta")}),
        ("model", "default", {"model": None}),
        ("reasoningEffort", "xhigh", {"effort": "xhigh"}),
        ("reasoningEffort", "default", {"effort": None}),
    ],
)
def test_applying_an_offered_value_changes_only_that_setting(
    config_id: str, value: str, change: dict[str, Any]
) -> None:
    start = SessionSettings(model=ModelChoice("spark-1", "meta"), effort="low")
    after = apply_config_option(start, config_id, value, CATALOG)
    assert after == replace(start, **change)
    option = next(o for o in _wire(config_options(after, CATALOG)) if o["id"] == config_id)
    assert option["currentValue"] == value


def test_reselecting_the_current_model_missing_from_the_catalog_keeps_it() -> None:
    settings = SessionSettings(model=ModelChoice("retired-3", "meta"))
    assert apply_config_option(settings, "model", "meta/retired-3", CATALOG) == settings
    assert apply_config_option(settings, "model", "meta/retired-3", None) == settings


@pytest.mark.parametrize(
    ("config_id", "value", "catalog", "message"),
    [
        pytest.param(
            "sandbox",
            "on",
            CATALOG,
            "the safety option 'sandbox' is not offered for the installed Muse (its `muse serve "
            "--help` does not list --disable-sandbox); choose among the options this session lists",
            id="a safety option the installed Muse does not offer",
        ),
        pytest.param(
            "sandboxes",
            "on",
            CATALOG,
            "unknown config option 'sandboxes'; this session offers mode, model, reasoningEffort",
            id="unknown config id",
        ),
        pytest.param(
            "mode",
            True,
            CATALOG,
            "config option 'mode' is a select; send one of its values as a string, not a boolean",
            id="a boolean for a select",
        ),
        pytest.param(
            "mode",
            "yolo",
            CATALOG,
            "unknown session mode 'yolo'; choose one of default, readOnly, plan, autoApprove, "
            "autoReject",
            id="unknown mode",
        ),
        pytest.param(
            "reasoningEffort",
            "extreme",
            CATALOG,
            "unknown reasoning effort 'extreme'; choose one of default, none, minimal, low, "
            "medium, high, xhigh, max, ultra",
            id="unknown effort",
        ),
        pytest.param(
            "model",
            "open-9",
            CATALOG,
            "model 'open-9' is not in this session's model menu, which offers 'default', "
            "'spark-1', 'spark-2', 'meta/open-9', 'gateway/open-9'; choose one of those "
            "(/models refreshes the list)",
            id="an ambiguous model id without provider",
        ),
        pytest.param(
            "model",
            "spark-2",
            None,
            "model 'spark-2' is not in this session's model menu, which offers 'default'; "
            "choose one of those (/models refreshes the list)",
            id="a model before the catalog is known",
        ),
    ],
)
def test_invalid_changes_are_refused_with_a_clear_message(
    config_id: str, value: str | bool, catalog: ModelCatalog | None, message: str
) -> None:
    with pytest.raises(RpcError) as caught:
        apply_config_option(SessionSettings(), config_id, value, catalog)
    assert (caught.value.code, caught.value.message) == (INVALID_PARAMS, message)


def test_apply_mode_refuses_an_unknown_mode() -> None:
    assert apply_mode(SessionSettings(effort="low"), "readOnly") == SessionSettings(
        mode_id="readOnly", effort="low"
    )
    with pytest.raises(RpcError) as caught:
        apply_mode(SessionSettings(), "yolo")
    assert caught.value.code == INVALID_PARAMS


def test_a_long_unknown_value_is_shown_shortened() -> None:
    with pytest.raises(RpcError) as caught:
        apply_config_option(SessionSettings(), "x" * 5000, "v", None)
    assert len(caught.value.message) < 200


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode_id": "yolo"}, "unknown session mode 'yolo'"),
        ({"effort": "default"}, "unknown reasoning effort 'default'"),
        ({"effort": "extreme"}, "unknown reasoning effort 'extreme'"),
    ],
)
def test_settings_cannot_hold_an_unknown_mode_or_effort(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        SessionSettings(**kwargs)


@pytest.mark.parametrize(
    ("mode_id", "flags", "policy"),
    [
        ("default", (), None),
        ("readOnly", ("--disable-write", "--disable-shell"), None),
        ("plan", ("--disable-write", "--disable-shell"), None),
        ("autoApprove", (), "approve"),
        ("autoReject", (), "reject"),
    ],
)
def test_each_mode_sets_host_flags_and_approval_policy(
    mode_id: str, flags: tuple[str, ...], policy: str | None
) -> None:
    settings = SessionSettings(mode_id=mode_id)
    assert (host_flags(settings), MODES[mode_id].automatic) == (flags, policy)


def test_the_turn_effort_is_sent_only_when_chosen() -> None:
    assert turn_effort(SessionSettings()) is None
    assert turn_effort(SessionSettings(effort="max")) == "max"


def test_the_tables_cannot_be_changed() -> None:
    with pytest.raises(TypeError):
        MODES["plan"] = MODES["default"]  # type: ignore[index]
    with pytest.raises(TypeError):
        EFFORTS["turbo"] = "Turbo"  # type: ignore[index]
