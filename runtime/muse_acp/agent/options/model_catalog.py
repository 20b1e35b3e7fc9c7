"""The model menu: Muse's model catalog as the values of the session's model option.

Contract (pure): ``ModelCatalog.from_result`` turns a ``model/list`` result into menu entries in
the host's order, each with the model's own reasoning-effort tiers where the catalog names them
(``efforts``). ``model_menu`` gives the model option's current value and values: ``default``
(Muse's default model, named) first, then the catalog; before a catalog is known, only the
current model; a current model the catalog no longer lists stays, marked.
"""

from __future__ import annotations

from dataclasses import dataclass

from muse_acp.agent.options.efforts import EffortTiers
from muse_acp.agent.options.select_options import DEFAULT_VALUE, SelectValue
from muse_acp_wire import msp

__all__ = ["ModelCatalog", "ModelChoice", "ModelEntry", "model_menu", "plain_value"]


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model the session runs on; ``provider_id`` None means whichever provider has it."""

    model_id: str
    provider_id: str | None = None


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One value of the model menu."""

    value: str
    name: str
    choice: ModelChoice
    is_default: bool
    tiers: EffortTiers | None = None
    """The model's own reasoning-effort tiers, when the catalog names them."""


@dataclass(frozen=True, slots=True)
class ModelCatalog:
    """The host's model list as menu entries, in the host's order.

    A model id offered by several providers is qualified as ``<providerId>/<modelId>`` so that
    every value names exactly one model; other values are the plain model id.
    """

    entries: tuple[ModelEntry, ...]

    @classmethod
    def from_result(cls, result: msp.ModelListResult) -> ModelCatalog:
        providers: dict[str, set[str | None]] = {}
        for row in result.models:
            providers.setdefault(row.model_id, set()).add(row.provider_id)
        entries: dict[str, ModelEntry] = {}
        for row in result.models:
            ambiguous = len(providers[row.model_id]) > 1 and row.provider_id is not None
            value = f"{row.provider_id}/{row.model_id}" if ambiguous else row.model_id
            name = f"{row.display_label} ({row.provider_id})" if ambiguous else row.display_label
            # Rows that differ only in members the menu does not show collapse to the first.
            choice = ModelChoice(row.model_id, row.provider_id)
            entries.setdefault(
                value, ModelEntry(value, name, choice, row.is_default, EffortTiers.of(row))
            )
        return cls(tuple(entries.values()))

    @property
    def default_model(self) -> ModelChoice | None:
        """The model the host uses when none is chosen, if the catalog marks one."""
        return next((entry.choice for entry in self.entries if entry.is_default), None)

    def entry(self, value: str) -> ModelEntry | None:
        return next((entry for entry in self.entries if entry.value == value), None)

    def entry_for(self, choice: ModelChoice) -> ModelEntry | None:
        """The entry for ``choice``; a choice without provider also matches a unique model id."""
        exact = next((e for e in self.entries if e.choice == choice), None)
        if exact is not None or choice.provider_id is not None:
            return exact
        matches = [e for e in self.entries if e.choice.model_id == choice.model_id]
        return matches[0] if len(matches) == 1 else None

    def running(self, model: ModelChoice | None) -> ModelEntry | None:
        """The entry of the model a session runs on: ``model``, else the catalog's default."""
        chosen = self.default_model if model is None else model
        return None if chosen is None else self.entry_for(chosen)


def plain_value(choice: ModelChoice) -> str:
    return (
        choice.model_id if choice.provider_id is None else f"{choice.provider_id}/{choice.model_id}"
    )


def model_menu(
    model: ModelChoice | None, catalog: ModelCatalog | None
) -> tuple[str, list[SelectValue]]:
    """The model option's current value and its values (value, name, description)."""
    if catalog is None:
        if model is None:
            return DEFAULT_VALUE, [(DEFAULT_VALUE, "Muse default model", None)]
        return plain_value(model), [(plain_value(model), model.model_id, None)]
    default = catalog.default_model
    default_entry = None if default is None else catalog.entry_for(default)
    default_name = "Muse default model"
    if default_entry is not None:
        default_name = f"{default_name} ({default_entry.name})"
    values: list[SelectValue] = [(DEFAULT_VALUE, default_name, None)]
    values += [(entry.value, entry.name, None) for entry in catalog.entries]
    if model is None:
        return DEFAULT_VALUE, values
    current = catalog.entry_for(model)
    if current is not None:
        return current.value, values
    # The session keeps running on its model even when the host stops listing it.
    missing = plain_value(model)
    values.append((missing, model.model_id, "Not in Muse's current model list."))
    return missing, values
