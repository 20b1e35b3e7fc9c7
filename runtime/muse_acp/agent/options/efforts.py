"""Reasoning effort: the efforts Muse knows, and the tiers one model of its catalog takes.

Contract (pure): ``EFFORTS`` names every effort of Muse's vocabulary behind the select value
``default``, which sends none. ``EffortTiers.of`` reads a catalog row's own tiers (the described
``reasoningEffortVariants``, else the complete set ``variants``) and its default; None when the
row names no tier (hosts before 1.4.2, or a catalog that does not know). ``effort_menu`` gives
the effort option's current value and values: ``default`` first, named after the model's default
tier, then the model's tiers in the catalog's order; every effort when the tiers are unknown. An
effort the model lacks that a session still holds is listed last and marked, so the option's
current value is always one of its values. ``EffortTiers.offers`` says whether an effort may be
sent for the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from muse_acp.agent.options.select_options import DEFAULT_VALUE, SelectValue
from muse_acp_wire import msp

__all__ = ["EFFORTS", "EffortTiers", "effort_menu"]

EFFORTS: Final[Mapping[str, str]] = MappingProxyType(
    {
        DEFAULT_VALUE: "Muse default",
        "none": "None",
        "minimal": "Minimal",
        "low": "Low",
        "medium": "Medium",
        "high": "High",
        "xhigh": "Extra high",
        "max": "Max",
        "ultra": "Ultra",
    }
)
"""Reasoning effort values and their names; ``default`` sends no effort to the host."""

_NOT_OFFERED: Final = "Not offered by the current model, so muse-acp does not send it."


@dataclass(frozen=True, slots=True)
class EffortTiers:
    """The reasoning-effort tiers one model takes, in the catalog's order, with the catalog's
    description of each where it has one, and the tier Muse uses when a turn names none."""

    tiers: tuple[tuple[str, str | None], ...]
    default: str | None

    @classmethod
    def of(cls, row: msp.ModelInfo) -> EffortTiers | None:
        """The tiers ``row`` declares, or None when it declares none."""
        found: dict[str, str | None] = {}
        for described in row.reasoning_effort_variants or ():
            found.setdefault(described.tier, described.description)
        if not found and isinstance(row.variants, list):
            found = dict.fromkeys(row.variants)
        if not found:  # an empty list says no more than an absent one
            return None
        default = row.default_reasoning_effort
        return cls(tuple(found.items()), default if default in found else None)

    def offers(self, effort: str) -> bool:
        return any(tier == effort for tier, _ in self.tiers)

    @property
    def default_name(self) -> str:
        """The ``default`` value's name: Muse's default, and the tier it is when known."""
        name = EFFORTS[DEFAULT_VALUE]
        return name if self.default is None else f"{name} ({EFFORTS[self.default]})"


def effort_menu(effort: str | None, tiers: EffortTiers | None) -> tuple[str, list[SelectValue]]:
    """The effort option's current value and its values (see the module contract)."""
    current = effort or DEFAULT_VALUE
    if tiers is None:
        return current, [(value, name, None) for value, name in EFFORTS.items()]
    values: list[SelectValue] = [(DEFAULT_VALUE, tiers.default_name, None)]
    values += [(tier, EFFORTS[tier], description) for tier, description in tiers.tiers]
    if effort is not None and not tiers.offers(effort):
        values.append((effort, EFFORTS[effort], _NOT_OFFERED))
    return current, values
