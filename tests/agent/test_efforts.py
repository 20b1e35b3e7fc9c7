"""Reasoning effort per model: a catalog row's own tiers become the effort menu, an effort the
model lacks is refused when chosen and dropped (with a sentence) when the model changes or a
stored session comes back."""

from __future__ import annotations

from typing import Any

import pytest

from muse_acp.agent.options.config_options import (
    ModelCatalog,
    ModelChoice,
    SessionSettings,
    apply_config_option,
    config_options,
    fit_effort,
)
from muse_acp.agent.options.efforts import EFFORTS, EffortTiers, effort_menu
from muse_acp.agent.options.preferences import StoredSettings
from muse_acp.agent.options.remembered import restored
from muse_acp.rpc.errors import INVALID_PARAMS, RpcError
from muse_acp_wire import acp, msp


def _row(model_id: str, *, default: bool = False, **tiers: Any) -> dict[str, Any]:
    return {
        "modelId": model_id,
        "displayLabel": model_id,
        "providerId": "meta",
        "profileId": None,
        "releaseDate": None,
        "description": None,
        "contextLimit": None,
        "outputLimit": None,
        "cost": None,
        "isActive": False,
        "isDefault": default,
        **tiers,
    }


def _described(*tiers: str) -> list[dict[str, str]]:
    return [{"tier": tier} for tier in tiers]


def _catalog(*rows: dict[str, Any]) -> ModelCatalog:
    result = msp.ModelListResult.model_validate({"source": "providerCatalog", "models": rows})
    return ModelCatalog.from_result(result)


CATALOG = _catalog(
    _row(
        "spark-fast",
        default=True,
        reasoningEffortVariants=_described("minimal", "low", "high"),
        defaultReasoningEffort="low",
    ),
    _row(
        "spark-deep",
        reasoningEffortVariants=[{"tier": "high"}, {"tier": "max", "description": "Slowest."}],
        defaultReasoningEffort="max",
    ),
    _row("spark-old"),
)
FAST = ModelChoice("spark-fast", "meta")
DEEP = ModelChoice("spark-deep", "meta")
OLD = ModelChoice("spark-old", "meta")
EVERY_EFFORT = list(EFFORTS)


@pytest.mark.parametrize(
    ("members", "tiers", "default"),
    [
        ({}, None, None),
        ({"variants": "unknown"}, None, None),
        ({"variants": [], "reasoningEffortVariants": []}, None, None),
        (
            {
                "reasoningEffortVariants": _described("low", "high"),
                "defaultReasoningEffort": "high",
            },
            (("low", None), ("high", None)),
            "high",
        ),
        (
            # The described tiers are the ones to offer; the plain set is a fallback.
            {"variants": ["low", "medium"], "reasoningEffortVariants": _described("medium")},
            (("medium", None),),
            None,
        ),
        ({"variants": ["xhigh", "low"]}, (("xhigh", None), ("low", None)), None),
        (
            {"reasoningEffortVariants": _described("low", "low"), "defaultReasoningEffort": "max"},
            (("low", None),),
            None,
        ),
        (
            {"reasoningEffortVariants": [{"tier": "max", "description": "Deepest."}]},
            (("max", "Deepest."),),
            None,
        ),
    ],
    ids=[
        "no tiers",
        "unknown",
        "empty lists",
        "described with default",
        "described before variants",
        "variants only, catalog order",
        "repeated tier, default not a tier",
        "description kept",
    ],
)
def test_a_catalog_row_s_tiers(
    members: dict[str, Any], tiers: tuple[tuple[str, str | None], ...] | None, default: str | None
) -> None:
    found = EffortTiers.of(msp.ModelInfo.model_validate(_row("m", **members)))
    if tiers is None:
        assert found is None
    else:
        assert found == EffortTiers(tiers, default)


LOW_HIGH = EffortTiers((("low", None), ("high", "Deep.")), "high")


@pytest.mark.parametrize(
    ("effort", "tiers", "current", "values"),
    [
        (None, None, "default", [(value, name, None) for value, name in EFFORTS.items()]),
        ("none", None, "none", [(value, name, None) for value, name in EFFORTS.items()]),
        (
            None,
            LOW_HIGH,
            "default",
            [
                ("default", "Muse default (High)", None),
                ("low", "Low", None),
                ("high", "High", "Deep."),
            ],
        ),
        (
            "low",
            EffortTiers((("low", None),), None),
            "low",
            [("default", "Muse default", None), ("low", "Low", None)],
        ),
        (
            "max",
            LOW_HIGH,
            "max",
            [
                ("default", "Muse default (High)", None),
                ("low", "Low", None),
                ("high", "High", "Deep."),
                ("max", "Max", "Not offered by the current model, so muse-acp does not send it."),
            ],
        ),
    ],
    ids=["unknown tiers", "unknown tiers, chosen", "model tiers", "no default", "held, lacking"],
)
def test_the_effort_menu(
    effort: str | None,
    tiers: EffortTiers | None,
    current: str,
    values: list[tuple[str, str, str | None]],
) -> None:
    assert effort_menu(effort, tiers) == (current, values)


def _effort_values(settings: SessionSettings, catalog: ModelCatalog | None) -> list[str]:
    option = config_options(settings, catalog)[2]
    assert option.id == "reasoningEffort"
    return [
        str(value.value)
        for value in option.options
        if isinstance(value, acp.SessionConfigSelectOption)
    ]


@pytest.mark.parametrize(
    ("model", "catalog", "values"),
    [
        (None, CATALOG, ["default", "minimal", "low", "high"]),
        (FAST, CATALOG, ["default", "minimal", "low", "high"]),
        (DEEP, CATALOG, ["default", "high", "max"]),
        (OLD, CATALOG, EVERY_EFFORT),
        (ModelChoice("gone", "meta"), CATALOG, EVERY_EFFORT),
        (DEEP, None, EVERY_EFFORT),
    ],
    ids=[
        "Muse's default model",
        "chosen",
        "another model",
        "row without tiers",
        "unlisted",
        "no catalog",
    ],
)
def test_the_effort_option_lists_the_current_model_s_tiers(
    model: ModelChoice | None, catalog: ModelCatalog | None, values: list[str]
) -> None:
    assert _effort_values(SessionSettings(model=model), catalog) == values


def test_the_default_value_is_named_after_the_model_s_default_tier() -> None:
    option = config_options(SessionSettings(model=DEEP), CATALOG)[2]
    assert [value.name for value in option.options][:1] == ["Muse default (Max)"]


def test_choosing_the_model_changes_the_effort_values_with_it() -> None:
    settings = apply_config_option(SessionSettings(model=FAST), "model", "spark-deep", CATALOG)
    assert _effort_values(settings, CATALOG) == ["default", "high", "max"]


@pytest.mark.parametrize(
    ("model", "effort", "value", "after"),
    [
        (DEEP, None, "max", "max"),
        (DEEP, "max", "default", None),
        (DEEP, "max", "max", "max"),
        (OLD, None, "none", "none"),
        (None, None, "minimal", "minimal"),
    ],
    ids=["offered", "default", "reselected", "tiers unknown", "default model's tier"],
)
def test_an_offered_effort_is_taken(
    model: ModelChoice | None, effort: str | None, value: str, after: str | None
) -> None:
    settings = SessionSettings(model=model, effort=effort)
    assert apply_config_option(settings, "reasoningEffort", value, CATALOG).effort == after


def test_an_effort_the_model_lacks_is_refused_saying_what_it_offers() -> None:
    with pytest.raises(RpcError) as raised:
        apply_config_option(SessionSettings(model=DEEP), "reasoningEffort", "low", CATALOG)
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == (
        "'spark-deep' does not offer reasoning effort 'low'; choose one of default, high, max, "
        "or another model first"
    )


def test_a_held_effort_the_model_lacks_can_only_be_left() -> None:
    # A session that still holds an effort its model lacks (its tiers arrived later) may keep
    # it selected; the fitting that follows drops it.
    settings = SessionSettings(model=DEEP, effort="low")
    assert apply_config_option(settings, "reasoningEffort", "low", CATALOG) == settings


@pytest.mark.parametrize(
    ("model", "effort", "kept", "default"),
    [
        (FAST, "low", "low", None),
        (DEEP, "low", None, "Max"),
        (None, "max", None, "Low"),
        (OLD, "none", "none", None),
        (DEEP, None, None, None),
    ],
    ids=["offered", "lacking", "lacking on the default model", "unknown tiers", "no effort"],
)
def test_fitting_drops_only_an_effort_the_model_lacks(
    model: ModelChoice | None, effort: str | None, kept: str | None, default: str | None
) -> None:
    settings = SessionSettings(mode_id="plan", model=model, effort=effort)
    fitted, dropped = fit_effort(settings, CATALOG)
    assert fitted == SessionSettings(mode_id="plan", model=model, effort=kept)
    if kept == effort:
        assert dropped is None
    else:
        assert dropped is not None
        assert (dropped.effort, dropped.default) == (effort, default)


def test_the_sentence_names_the_model_the_effort_and_what_applies() -> None:
    _, dropped = fit_effort(SessionSettings(model=DEEP, effort="low"), CATALOG)
    assert dropped is not None
    assert dropped.sentence() == (
        "'spark-deep' does not offer the reasoning effort Low, so muse-acp does not send it: "
        "Muse's default for this model applies (Max). Choose another level in the Reasoning "
        "effort setting if you want a different one."
    )


def test_fitting_without_a_catalog_keeps_the_effort() -> None:
    settings = SessionSettings(model=DEEP, effort="low")
    assert fit_effort(settings, None) == (settings, None)


def test_a_stored_effort_the_model_lacks_comes_back_as_muse_s_default_saying_so() -> None:
    stored = StoredSettings(
        mode_id="default", model_id="spark-deep", provider_id="meta", effort="low"
    )
    back, notes = restored(stored, CATALOG)
    assert back == SessionSettings(model=DEEP)
    assert notes == [
        "its stored reasoning effort Low is not offered by 'spark-deep'; Muse's default for this "
        "model applies (Max)"
    ]


def test_a_stored_effort_on_a_model_no_longer_listed_is_fitted_to_muse_s_default_model() -> None:
    stored = StoredSettings(mode_id="default", model_id="gone", provider_id="meta", effort="max")
    back, notes = restored(stored, CATALOG)
    assert back == SessionSettings()
    assert len(notes) == 2
    assert "'gone' is no longer offered" in notes[0]
    assert notes[1].startswith("its stored reasoning effort Max is not offered by 'spark-fast'")
