"""A session's settings, and the ACP modes and config options that show and change them.

Contract: ``SessionSettings`` holds a session's mode, model, reasoning effort and safety choices,
always valid (an unknown mode or effort cannot be constructed). ``config_options`` presents them
as select options, in the order ``mode``, ``model``, ``reasoningEffort``, then the safety
options the installed Muse offers or that hold a stored choice it cannot apply (see
``safety``), whose current values are always among their options. ``apply_config_option`` and
``apply_mode`` validate a client's change and return new settings, raising ``RpcError``
``INVALID_PARAMS`` with a message that says how to fix the request. The model menu comes from
the host's ``model/list`` through a ``ModelCatalog``; until one is known the menu holds only the
current model. Pure functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, TypeGuard, get_args

from muse_acp.agent.options.safety import (
    CONTROLS,
    SafetyChoices,
    apply_safety,
    safety_flags,
    safety_options,
)
from muse_acp.agent.options.select_options import SelectValue, select_option
from muse_acp.rpc.errors import INVALID_PARAMS, RpcError
from muse_acp.text import quoted
from muse_acp_wire import acp, msp

__all__ = [
    "DEFAULT_VALUE",
    "EFFORTS",
    "MODES",
    "ModeSpec",
    "ModelCatalog",
    "ModelChoice",
    "ModelEntry",
    "SessionSettings",
    "apply_config_option",
    "apply_mode",
    "config_options",
    "current_names",
    "host_flags",
    "session_modes",
    "turn_effort",
]

DEFAULT_VALUE: Final = "default"
"""The select value that leaves a setting to the host's own default."""

MODE_OPTION: Final = "mode"
MODEL_OPTION: Final = "model"
EFFORT_OPTION: Final = "reasoningEffort"
_VALUE_SHOWN: Final = 80


@dataclass(frozen=True, slots=True)
class ModeSpec:
    """One session mode: how the host is started and who answers approvals."""

    id: str
    name: str
    description: str
    host_flags: tuple[str, ...]
    automatic: Literal["approve", "reject"] | None
    """The policy the adapter answers approvals with, or None to ask the client."""


MODES: Final[Mapping[str, ModeSpec]] = MappingProxyType(
    {
        spec.id: spec
        for spec in (
            ModeSpec(
                "default",
                "Ask",
                "Muse asks before actions that need approval; you decide each one in the client.",
                (),
                None,
            ),
            ModeSpec(
                "readOnly",
                "Read-only",
                "Muse cannot write files or run shell commands; other approvals are still asked.",
                ("--disable-write", "--disable-shell"),
                None,
            ),
            ModeSpec(
                "plan",
                "Plan",
                "Muse plans without writing files or running commands; leave it by choosing "
                "another mode.",
                ("--disable-write", "--disable-shell"),
                None,
            ),
            ModeSpec(
                "autoApprove",
                "Auto-approve",
                "Each approval is granted once with the allow choice Muse offers, without asking.",
                (),
                "approve",
            ),
            ModeSpec(
                "autoReject",
                "Auto-reject",
                "Each approval is refused once with the deny choice Muse offers, without asking.",
                (),
                "reject",
            ),
        )
    }
)

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


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """A model the session runs on; ``provider_id`` None means whichever provider has it."""

    model_id: str
    provider_id: str | None = None


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """What the client chose for a session; None leaves the model or effort to the host."""

    mode_id: str = "default"
    model: ModelChoice | None = None
    effort: str | None = None
    safety: SafetyChoices = field(default_factory=SafetyChoices)

    def __post_init__(self) -> None:
        if self.mode_id not in MODES:
            raise ValueError(f"unknown session mode {self.mode_id!r}")
        if self.effort == DEFAULT_VALUE or (self.effort is not None and self.effort not in EFFORTS):
            raise ValueError(f"unknown reasoning effort {self.effort!r}")


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """One value of the model menu."""

    value: str
    name: str
    choice: ModelChoice
    is_default: bool


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
            entries.setdefault(
                value,
                ModelEntry(value, name, ModelChoice(row.model_id, row.provider_id), row.is_default),
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


def _plain_value(choice: ModelChoice) -> str:
    return (
        choice.model_id if choice.provider_id is None else f"{choice.provider_id}/{choice.model_id}"
    )


def _model_menu(
    model: ModelChoice | None, catalog: ModelCatalog | None
) -> tuple[str, list[SelectValue]]:
    """The model option's current value and its values (value, name, description)."""
    if catalog is None:
        if model is None:
            return DEFAULT_VALUE, [(DEFAULT_VALUE, "Muse default model", None)]
        return _plain_value(model), [(_plain_value(model), model.model_id, None)]
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
    missing = _plain_value(model)
    values.append((missing, model.model_id, "Not in Muse's current model list."))
    return missing, values


def config_options(
    settings: SessionSettings, catalog: ModelCatalog | None
) -> list[acp.SelectSessionConfigOption]:
    """The session's config options: mode, model and reasoning effort, in that order."""
    model_current, model_values = _model_menu(settings.model, catalog)
    return [
        select_option(
            MODE_OPTION,
            "Mode",
            "mode",
            settings.mode_id,
            [(spec.id, spec.name, spec.description) for spec in MODES.values()],
        ),
        select_option(MODEL_OPTION, "Model", "model", model_current, model_values),
        select_option(
            EFFORT_OPTION,
            "Reasoning effort",
            "thought_level",
            settings.effort or DEFAULT_VALUE,
            [(value, name, None) for value, name in EFFORTS.items()],
        ),
        *safety_options(settings.safety),
    ]


def current_names(settings: SessionSettings, catalog: ModelCatalog | None) -> dict[str, str]:
    """Each option's id and the menu name of its current value (for ``/status``)."""
    names: dict[str, str] = {}
    for option in config_options(settings, catalog):
        # These menus are flat (``_select`` builds no groups).
        values = [o for o in option.options if isinstance(o, acp.SessionConfigSelectOption)]
        shown = next((o.name for o in values if o.value == option.current_value), None)
        names[option.id] = shown or str(option.current_value)
    return names


def session_modes(settings: SessionSettings) -> acp.SessionModeState:
    """The ACP mode state: every mode, with the session's current one."""
    return acp.SessionModeState(
        current_mode_id=settings.mode_id,
        available_modes=[
            acp.SessionMode(id=spec.id, name=spec.name, description=spec.description)
            for spec in MODES.values()
        ],
    )


def _shown(value: str) -> str:
    return quoted(value, _VALUE_SHOWN)


def apply_mode(settings: SessionSettings, mode_id: str) -> SessionSettings:
    """Return ``settings`` in mode ``mode_id``.

    Raises:
        RpcError: ``INVALID_PARAMS`` for a mode this adapter does not offer.
    """
    if mode_id not in MODES:
        raise RpcError(
            INVALID_PARAMS,
            f"unknown session mode {_shown(mode_id)}; choose one of {', '.join(MODES)}",
        )
    return replace(settings, mode_id=mode_id)


def _apply_model(
    settings: SessionSettings, value: str, catalog: ModelCatalog | None
) -> SessionSettings:
    if value == DEFAULT_VALUE:
        return replace(settings, model=None)
    current, _ = _model_menu(settings.model, catalog)
    if value == current:
        return settings
    entry = None if catalog is None else catalog.entry(value)
    if entry is None:
        raise RpcError(
            INVALID_PARAMS,
            f"model {_shown(value)} is not in this session's model menu; refresh the model "
            "list with /models, then choose one of the listed models",
        )
    return replace(settings, model=entry.choice)


def _apply_effort(settings: SessionSettings, value: str) -> SessionSettings:
    if value not in EFFORTS:
        raise RpcError(
            INVALID_PARAMS,
            f"unknown reasoning effort {_shown(value)}; choose one of {', '.join(EFFORTS)}",
        )
    return replace(settings, effort=None if value == DEFAULT_VALUE else value)


_Apply: TypeAlias = Callable[[SessionSettings, str, "ModelCatalog | None"], SessionSettings]

_APPLIERS: Final[Mapping[str, _Apply]] = MappingProxyType(
    {
        MODE_OPTION: lambda settings, value, _catalog: apply_mode(settings, value),
        MODEL_OPTION: _apply_model,
        EFFORT_OPTION: lambda settings, value, _catalog: _apply_effort(settings, value),
    }
)


def apply_config_option(
    settings: SessionSettings, config_id: str, value: str | bool, catalog: ModelCatalog | None
) -> SessionSettings:
    """Return ``settings`` with config option ``config_id`` set to ``value``.

    Raises:
        RpcError: ``INVALID_PARAMS`` for an unknown option, a boolean value (every option here
            is a select), or a value the option does not offer.
    """
    apply = _APPLIERS.get(config_id)
    if apply is None and config_id not in CONTROLS:
        offered = [*_APPLIERS, *(c for c in CONTROLS if c in settings.safety.offer)]
        raise RpcError(
            INVALID_PARAMS,
            f"unknown config option {_shown(config_id)}; this session offers {', '.join(offered)}",
        )
    if isinstance(value, bool):
        raise RpcError(
            INVALID_PARAMS,
            f"config option {config_id!r} is a select; send one of its values as a string, "
            "not a boolean",
        )
    if apply is None:
        return replace(settings, safety=apply_safety(settings.safety, config_id, value))
    return apply(settings, value, catalog)


def host_flags(settings: SessionSettings) -> tuple[str, ...]:
    """The command-line flags the session's mode and safety choices add to ``muse serve``."""
    flags = MODES[settings.mode_id].host_flags + safety_flags(settings.safety)
    return tuple(dict.fromkeys(flags))  # read-only modes and the safety options may overlap


_HOST_EFFORTS: Final = frozenset(get_args(msp.ReasoningEffort))


def _is_host_effort(value: str) -> TypeGuard[msp.ReasoningEffort]:
    return value in _HOST_EFFORTS


def turn_effort(settings: SessionSettings) -> msp.ReasoningEffort | None:
    """The ``reasoningEffort`` to send with ``turn/start``, or None to send none."""
    effort = settings.effort
    return effort if effort is not None and _is_host_effort(effort) else None
