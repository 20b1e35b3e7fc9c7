"""The simulated model catalog: the models ``model/list`` serves, their reasoning-effort tiers,
and the refusal of a tier a model does not take.

Contract: ``MODELS`` are the catalog's rows in the host's order, ``DEFAULT_MODEL`` the one marked
default. A version whose bundle declares per-model tiers (``ModelInfo.reasoningEffortVariants``,
``HostProfile.effort_tiers``) lists each row with its own tiers and default (``catalog_rows``),
runs a turn that names no tier at its model's default (``effective_effort``) and refuses a tier
the session's model lacks (``check_effort``) with -32602 ``invalidParams``, as Muse refuses a
tier outside its vocabulary. ``muse-spark-1.2`` and ``muse-spark-1.3`` lack ``none`` (Muse's
``meta`` provider refuses it), only ``muse-spark-1.3`` takes ``max`` and no model ``ultra``; the
default model keeps ``none``, so scripted turns can still ask for no reasoning. Older versions
list the rows without tiers and accept every tier, as they always did.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from muse_acp.sim.state import errors
from muse_acp.sim.state.profile import HostProfile
from muse_acp_wire.msp import ModelInfo

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "MODEL_TIERS",
    "catalog_rows",
    "check_effort",
    "effective_effort",
]

DEFAULT_MODEL: Final = "muse-spark-1.3-contributor"

_SPARK: Final = ("minimal", "low", "medium", "high", "xhigh")

MODEL_TIERS: Final[Mapping[str, tuple[tuple[str, ...], str]]] = MappingProxyType(
    {
        "muse-spark-1.2": (_SPARK, "medium"),
        "muse-spark-1.3": ((*_SPARK, "max"), "high"),
        "muse-spark-1.3-contributor": (("none", *_SPARK), "high"),
    }
)
"""Each model's tiers in the catalog's order, and the tier it runs at when a turn names none."""

_TIER_TEXT: Final[Mapping[str, str]] = MappingProxyType(
    {"max": "The deepest reasoning this model offers; the slowest replies."}
)
"""The catalog's wording for some tiers (a real catalog describes only some)."""

MODELS: Final = tuple(
    ModelInfo(
        model_id=model_id,
        display_label=model_id,
        provider_id="meta",
        profile_id="default",
        release_date=released,
        description=description,
        context_limit=1_000_000,
        output_limit=128_000,
        cost=None,
        is_active=False,
        is_default=model_id == DEFAULT_MODEL,
    )
    for model_id, released, description in (
        ("muse-spark-1.2", "2026-08-05", None),
        ("muse-spark-1.3", "2026-09-02", None),
        ("muse-spark-1.3-contributor", "2026-09-02", "Shares content for product improvement."),
    )
)


def _with_tiers(row: ModelInfo) -> ModelInfo:
    tiers, default = MODEL_TIERS[row.model_id]
    described = [
        {"tier": tier, **({"description": _TIER_TEXT[tier]} if tier in _TIER_TEXT else {})}
        for tier in tiers
    ]
    body = row.model_dump(mode="json", exclude_unset=True)
    body.update(
        variants=list(tiers), defaultReasoningEffort=default, reasoningEffortVariants=described
    )
    return ModelInfo.model_validate(body)


def catalog_rows(profile: HostProfile, active: str | None) -> list[ModelInfo]:
    """The rows ``model/list`` answers with, ``active`` marked (see the module contract)."""
    rows = [model.model_copy(update={"is_active": model.model_id == active}) for model in MODELS]
    return [_with_tiers(row) for row in rows] if profile.effort_tiers else rows


def effective_effort(profile: HostProfile, model_id: str | None, effort: str | None) -> str | None:
    """The tier a turn runs at: the one it or the session named, else its model's default where
    the catalog has one (None: the host's own default, unnamed)."""
    row = MODEL_TIERS.get(model_id or "") if profile.effort_tiers else None
    return effort if effort is not None or row is None else row[1]


def check_effort(profile: HostProfile, model_id: str | None, effort: str | None) -> None:
    """Refuse ``effort`` when the session's model does not take it (see the module contract).

    Raises:
        RpcError: -32602 ``invalidParams``.
    """
    row = MODEL_TIERS.get(model_id or "") if profile.effort_tiers else None
    if effort is None or row is None:
        return
    tiers = row[0]
    if effort not in tiers:
        raise errors.invalid_params(
            f"Invalid params: reasoning effort {effort!r} is not a tier of model {model_id} "
            f"(it takes {', '.join(tiers)})"
        )
