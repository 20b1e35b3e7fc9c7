"""A session's settings, and the ACP modes and config options that show and change them.

Contract: ``SessionSettings`` holds a session's mode, model, reasoning effort and safety choices,
always valid (an unknown mode or effort cannot be constructed). ``config_options`` presents them
as select options, in the order ``mode``, ``model``, ``reasoningEffort``, then the safety
options the installed Muse offers or that hold a stored choice it cannot apply (see
``safety``), whose current values are always among their options. ``apply_config_option`` and
``apply_mode`` validate a client's change and return new settings, raising ``RpcError``
``INVALID_PARAMS`` with a message that says how to fix the request. The model menu comes from
the host's ``model/list`` through a ``ModelCatalog`` (``model_catalog``); until one is known the
menu holds only the current model. The effort menu holds the current model's own tiers where the
catalog names them (``efforts``), else every effort; ``fit_effort`` drops an effort the current
model lacks, with a sentence for the user. Pure functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, TypeGuard, get_args

from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.options.efforts import EFFORTS, EffortTiers, effort_menu
from muse_acp.agent.options.model_catalog import (
    ModelCatalog,
    ModelChoice,
    ModelEntry,
    model_menu,
)
from muse_acp.agent.options.safety import (
    CONTROLS,
    SafetyChoices,
    apply_safety,
    safety_flags,
    safety_options,
)
from muse_acp.agent.options.select_options import DEFAULT_VALUE, select_option
from muse_acp.rpc.errors import INVALID_PARAMS, RpcError
from muse_acp.text import quoted
from muse_acp_wire import acp, msp

__all__ = [
    "DEFAULT_VALUE",
    "EFFORTS",
    "MODES",
    "EffortDropped",
    "ModeSpec",
    "ModelCatalog",
    "ModelChoice",
    "ModelEntry",
    "SessionSettings",
    "apply_config_option",
    "apply_mode",
    "config_options",
    "current_names",
    "fit_effort",
    "host_flags",
    "session_modes",
    "turn_effort",
]

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


def config_options(
    settings: SessionSettings, catalog: ModelCatalog | None
) -> list[acp.SelectSessionConfigOption]:
    """The session's config options: mode, model and reasoning effort, in that order."""
    model_current, model_values = model_menu(settings.model, catalog)
    effort_current, effort_values = effort_menu(settings.effort, _tiers(settings, catalog))
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
            EFFORT_OPTION, "Reasoning effort", "thought_level", effort_current, effort_values
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
    current, offered = model_menu(settings.model, catalog)
    if value == current:
        return settings
    entry = None if catalog is None else catalog.entry(value)
    if entry is None:
        raise RpcError(
            INVALID_PARAMS,
            f"model {_shown(value)} is not in this session's model menu, which offers "
            f"{_listed([listed for listed, _, _ in offered])}; choose one of those (/models "
            "refreshes the list)",
        )
    return replace(settings, model=entry.choice)


_LISTED: Final = 40
"""Most menu values an error lists (a catalog can be long)."""


def _listed(values: list[str]) -> str:
    shown = ", ".join(_shown(value) for value in values[:_LISTED])
    rest = len(values) - _LISTED
    return shown if rest <= 0 else f"{shown} and {rest} more"


def _tiers(settings: SessionSettings, catalog: ModelCatalog | None) -> EffortTiers | None:
    """The tiers of the model the session runs on, when the catalog names them."""
    entry = None if catalog is None else catalog.running(settings.model)
    return None if entry is None else entry.tiers


def _model_name(settings: SessionSettings, catalog: ModelCatalog | None) -> str:
    entry = None if catalog is None else catalog.running(settings.model)
    return "the current model" if entry is None else _shown(entry.name)


def _apply_effort(
    settings: SessionSettings, value: str, catalog: ModelCatalog | None
) -> SessionSettings:
    if value not in EFFORTS:
        raise RpcError(
            INVALID_PARAMS,
            f"unknown reasoning effort {_shown(value)}; choose one of {', '.join(EFFORTS)}",
        )
    tiers = _tiers(settings, catalog)
    if value != (settings.effort or DEFAULT_VALUE) and not (
        value == DEFAULT_VALUE or tiers is None or tiers.offers(value)
    ):
        offered = [DEFAULT_VALUE, *(tier for tier, _ in tiers.tiers)]
        raise RpcError(
            INVALID_PARAMS,
            f"{_model_name(settings, catalog)} does not offer reasoning effort {_shown(value)}; "
            f"choose one of {', '.join(offered)}, or another model first",
        )
    return replace(settings, effort=None if value == DEFAULT_VALUE else value)


@dataclass(frozen=True, slots=True)
class EffortDropped:
    """An effort a session held that its model does not offer, dropped by ``fit_effort``."""

    effort: str
    model: str
    """The model's name, quoted for a sentence."""
    default: str | None
    """The name of the tier Muse uses by default for the model, when the catalog says."""

    @property
    def applies(self) -> str:
        """What applies instead, as the end of a sentence."""
        tier = "" if self.default is None else f" ({self.default})"
        return f"Muse's default for this model applies{tier}"

    def sentence(self) -> str:
        return (
            f"{self.model} does not offer the reasoning effort {EFFORTS[self.effort]}, so "
            f"muse-acp does not send it: {self.applies}. Choose another level in the Reasoning "
            "effort setting if you want a different one."
        )

    def notice(self) -> Notice:
        """The warning that tells the user (``sentence`` as its text)."""
        title = f"Reasoning effort {EFFORTS[self.effort]} is not sent to {self.model}"
        return Notice("warning", title, self.sentence())


def fit_effort(
    settings: SessionSettings, catalog: ModelCatalog | None
) -> tuple[SessionSettings, EffortDropped | None]:
    """``settings`` with an effort the session's model takes, and the effort dropped, if any.

    An effort the catalog says the model lacks is dropped, so nothing is sent and Muse's default
    for the model applies; settings whose model's tiers are unknown are kept as they are.
    """
    tiers = _tiers(settings, catalog)
    effort = settings.effort
    if effort is None or tiers is None or tiers.offers(effort):
        return settings, None
    default = None if tiers.default is None else EFFORTS[tiers.default]
    dropped = EffortDropped(effort, _model_name(settings, catalog), default)
    return replace(settings, effort=None), dropped


_Apply: TypeAlias = Callable[[SessionSettings, str, "ModelCatalog | None"], SessionSettings]

_APPLIERS: Final[Mapping[str, _Apply]] = MappingProxyType(
    {
        MODE_OPTION: lambda settings, value, _catalog: apply_mode(settings, value),
        MODEL_OPTION: _apply_model,
        EFFORT_OPTION: _apply_effort,
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
