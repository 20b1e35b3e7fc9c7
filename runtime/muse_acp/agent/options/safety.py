"""Safety config options: Muse's sandbox, the sandbox's network, workspace writes, shell and the
host's native approval policy.

Contract (pure): ``SafetyChoices`` is what the user chose, always valid, with the controls the
installed Muse offers (``offer``). ``safety_options`` lists the offered controls,
``apply_safety`` validates a change (-32602), ``safety_flags`` are the ``muse serve`` flags of the
choices. The one rule (``refusal``): no turn runs with the sandbox disabled while approvals are
granted unasked; ``check_combination`` refuses a change into that (-32602) and
``check_runnable`` is the last guard before a turn. A stored choice the installed Muse cannot
apply is kept and listed as held (``held``); a held restriction blocks turns until the user
chooses the default. ``stored`` and ``from_stored`` convert to and from the store's form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from muse_acp.agent.errors.failures import Failure
from muse_acp.agent.options.select_options import SelectValue, select_option
from muse_acp.host.features import HostFeatures
from muse_acp.rpc.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from muse_acp.text import quoted
from muse_acp_wire import acp

__all__ = [
    "APPROVAL_POLICY",
    "CONTROLS",
    "SafetyChoices",
    "SafetyControl",
    "apply_safety",
    "check_combination",
    "check_runnable",
    "from_stored",
    "held_notes",
    "offered_controls",
    "refusal",
    "safe_policy",
    "safety_flags",
    "safety_options",
    "stored",
]

APPROVAL_POLICY: Final = "approvalPolicy"
_SHOWN: Final = 80


@dataclass(frozen=True, slots=True)
class SafetyControl:
    """One safety option: its values (the first is Muse's own default), the ``muse serve`` flag
    that applies a value other than the default (None: set on the wire instead), and the value
    that only widens what Muse may do (None: every other value restricts)."""

    id: str
    name: str
    description: str
    values: tuple[SelectValue, ...]
    flag: str | None
    widest: str | None = None

    @property
    def default(self) -> str:
        return self.values[0][0]

    def host_flag(self, value: str) -> str | None:
        if self.flag is None or value == self.default:
            return None
        # A flag with a value is written as one word, so probing it needs no value grammar.
        return f"{self.flag}={value}" if self.flag == "--sandbox-network" else self.flag

    def shown(self, value: str) -> str:
        """``Name: value name``, as the option menu shows it."""
        names = {entry[0]: entry[1] for entry in self.values}
        return f"{self.name}: {names.get(value, value)}"

    def unavailable(self) -> str:
        """Why an installed Muse that does not offer this control cannot apply it."""
        if self.flag is not None:
            return f"its `muse serve --help` does not list {self.flag}"
        return "it does not offer session/setApprovalMode"


_ON_OFF: Final = (("enabled", "Enabled", None), ("disabled", "Disabled", None))

CONTROLS: Final[Mapping[str, SafetyControl]] = MappingProxyType(
    {
        control.id: control
        for control in (
            SafetyControl(
                "sandbox",
                "Sandbox",
                "Whether Muse runs tools inside its sandbox. Applies from the next prompt.",
                _ON_OFF,
                "--disable-sandbox",
                "disabled",
            ),
            SafetyControl(
                "sandboxNetwork",
                "Sandbox network",
                "What network sandboxed tools may reach. Applies from the next prompt.",
                (
                    ("proxy-only", "Through Muse's proxy only", None),
                    ("restricted", "Restricted", None),
                    ("enabled", "Unrestricted", None),
                ),
                "--sandbox-network",
                "enabled",
            ),
            SafetyControl(
                "workspaceWrite",
                "Workspace writes",
                "Whether Muse may write files. Applies from the next prompt.",
                _ON_OFF,
                "--disable-write",
            ),
            SafetyControl(
                "shell",
                "Shell",
                "Whether Muse may run shell commands. Applies from the next prompt.",
                _ON_OFF,
                "--disable-shell",
            ),
            SafetyControl(
                APPROVAL_POLICY,
                "Muse approval policy",
                "Which actions Muse itself asks about before the adapter's mode answers. "
                "Applies from the next prompt.",
                (
                    ("promptUnmatched", "Ask for actions no rule allows (Muse default)", None),
                    ("onRequest", "Ask only when the model requests it", None),
                    ("denyUnmatched", "Refuse actions no rule allows", None),
                    ("allowAll", "Allow everything", None),
                ),
                None,
                "allowAll",
            ),
        )
    }
)


def offered_controls(serve_flags: frozenset[str], features: HostFeatures) -> frozenset[str]:
    """The controls an installed Muse can apply (see the module contract)."""
    offered = {c.id for c in CONTROLS.values() if c.flag is not None and c.flag in serve_flags}
    if features.has("nativeApprovalPolicy"):
        offered.add(APPROVAL_POLICY)
    return frozenset(offered)


@dataclass(frozen=True, slots=True)
class SafetyChoices:
    """The chosen value of each control; a control never chosen has none (Muse's default)."""

    values: tuple[tuple[str, str], ...] = ()
    """(control id, value) pairs, sorted by id, none of them a control's default."""
    offer: frozenset[str] = field(default=frozenset(), compare=False)
    """The controls the installed Muse offers."""
    unknown: tuple[tuple[str, str], ...] = ()
    """Stored (member, value) pairs this version does not know: kept for the store only."""

    def value(self, control_id: str) -> str:
        for key, value in self.values:  # a few pairs at most: asked before every turn
            if key == control_id:
                return value
        return CONTROLS[control_id].default

    def chosen(self, control_id: str) -> bool:
        return any(key == control_id for key, _ in self.values)

    def held(self) -> list[str]:
        """The chosen controls the installed Muse does not offer, in ``CONTROLS`` order."""
        return [key for key in CONTROLS if self.chosen(key) and key not in self.offer]

    def with_value(self, control_id: str, value: str) -> SafetyChoices:
        values = dict(self.values)
        if value == CONTROLS[control_id].default and control_id != APPROVAL_POLICY:
            values.pop(control_id, None)
        else:
            # A policy once chosen is sent even when it is Muse's default: Muse keeps the last
            # policy set on a session, so going back to the default has to be said.
            values[control_id] = value
        unknown = tuple(pair for pair in self.unknown if pair[0] != control_id)
        return replace(self, values=tuple(sorted(values.items())), unknown=unknown)

    def offered_to(self, offer: frozenset[str]) -> SafetyChoices:
        """These choices on a host offering ``offer``; what it cannot apply is held, not lost."""
        return replace(self, offer=offer)


def safety_options(choices: SafetyChoices) -> list[acp.SelectSessionConfigOption]:
    """The offered and held controls as select options, in ``CONTROLS`` order; a held one
    offers only its stored value and Muse's default."""
    options = []
    held = choices.held()
    for control in CONTROLS.values():
        if control.id not in choices.offer and control.id not in held:
            continue
        current = choices.value(control.id)
        values = list(control.values)
        description = control.description
        if control.id in held:
            values = [entry for entry in values if entry[0] in (control.default, current)]
            description = (
                f"The installed Muse cannot apply {current!r} ({control.unavailable()}); "
                f"choose {control.shown(control.default)!r} to run without it."
            )
        option = select_option(control.id, control.name, None, current, values)
        option.description = description
        options.append(option)
    return options


def _refused(kind: str, message: str, code: int = INVALID_PARAMS) -> RpcError:
    return Failure(kind, "client", retryable=False, phase="preparing").error(message, code)


def apply_safety(choices: SafetyChoices, control_id: str, value: str) -> SafetyChoices:
    """``choices`` with ``control_id`` set to ``value``; a held control takes only its stored
    value or Muse's default (which lets it go).

    Raises:
        RpcError: ``INVALID_PARAMS`` when the installed Muse does not offer the control, or for
            a value it does not have.
    """
    control = CONTROLS[control_id]
    held = control_id in choices.held()
    if control_id not in choices.offer and not held:
        raise _refused(
            "safetyControlUnavailable",
            f"the safety option {control_id!r} is not offered for the installed Muse "
            f"({control.unavailable()}); choose among the options this session lists",
        )
    allowed = [entry[0] for entry in control.values]
    if held:
        allowed = [control.default, choices.value(control_id)]
    if value not in allowed:
        raise RpcError(
            INVALID_PARAMS,
            f"{control_id} cannot be {quoted(value, _SHOWN)}; choose one of {', '.join(allowed)}",
        )
    if held:  # the stored value stays, or the choice goes (there is nothing to tell Muse)
        kept = tuple(pair for pair in choices.values if pair[0] != control_id)
        return choices if value != control.default else replace(choices, values=kept)
    return choices.with_value(control_id, value)


def safe_policy(choices: SafetyChoices) -> str:
    """The policy to set Muse back to from one the rule refuses: the chosen one, else default."""
    value = choices.value(APPROVAL_POLICY)
    return CONTROLS[APPROVAL_POLICY].default if value == "allowAll" else value


def refusal(choices: SafetyChoices, auto_approve: bool, host_mode: str | None = None) -> str | None:
    """The one rule: what would grant approvals unasked with the sandbox disabled, or None
    when nothing would (see the module contract).

    ``auto_approve`` is True when the session's mode grants every approval itself;
    ``host_mode`` is the approval mode Muse last reported for the session, if known.
    """
    if choices.value("sandbox") != "disabled":
        return None
    if auto_approve:
        return "Auto-approve mode"
    if choices.value(APPROVAL_POLICY) == "allowAll":
        return "the 'Allow everything' approval policy"
    if host_mode == "allowAll":
        return "Muse's own approval mode 'allowAll', which another Muse client set"
    return None


def _unsafe(who: str) -> str:
    return (
        f"with the sandbox disabled and {who}, Muse would run any command with your full file "
        "and network access and nobody would be asked first"
    )


def check_combination(
    choices: SafetyChoices,
    auto_approve: bool,
    before: tuple[SafetyChoices, bool] | None = None,
) -> None:
    """Refuse a change into a combination the rule refuses; a change from ``before`` (choices,
    auto-approve) that the rule refused for the same reason is not refused here.

    Raises:
        RpcError: ``INVALID_PARAMS`` saying what the combination would allow and how to avoid it.
    """
    who = refusal(choices, auto_approve)
    if who is None:
        return
    if before is not None and refusal(*before) == who:
        return  # this change does not touch the combination (``check_runnable`` still guards)
    raise _refused(
        "unsafeSafetyCombination",
        f"this change was not applied: {_unsafe(who)}. Keep the sandbox enabled, or choose a "
        "mode and approval policy that ask you.",
    )


def check_runnable(choices: SafetyChoices, auto_approve: bool, host_mode: str | None) -> None:
    """The last guard before a turn: refuse it in a combination the rule refuses, or while a
    held restriction cannot be applied.

    Raises:
        RpcError: ``INVALID_REQUEST`` saying why and what to choose; nothing was submitted.
    """
    who = refusal(choices, auto_approve, host_mode)
    if who is not None:
        raise _refused(
            "unsafeSafetyCombination",
            f"muse-acp did not run this prompt: {_unsafe(who)}. Enable the sandbox, or choose a "
            "mode and approval policy that ask you, then send the prompt again.",
            INVALID_REQUEST,
        )
    for control_id in choices.held():
        control, value = CONTROLS[control_id], choices.value(control_id)
        if value != control.widest:
            raise _refused(
                "safetySettingUnavailable",
                f"muse-acp did not run this prompt: this session's setting "
                f"{control.shown(value)!r} cannot be applied by the installed Muse "
                f"({control.unavailable()}) and it will not run without it. Choose "
                f"{control.shown(control.default)!r} to run without that restriction, or use "
                "a Muse that can apply it.",
                INVALID_REQUEST,
            )


def held_notes(choices: SafetyChoices) -> list[str]:
    """A sentence for each held choice: what applies instead, and that the choice is kept."""
    notes = []
    for control_id in choices.held():
        control, value = CONTROLS[control_id], choices.value(control_id)
        if value == control.widest:
            then = f"Muse's default ({control.shown(control.default)}) applies instead"
        else:
            then = (
                "its prompts are refused until you choose "
                f"{control.shown(control.default)!r} or use a Muse that can apply it"
            )
        notes.append(
            f"its safety setting {control.shown(value)!r} cannot be applied by the installed "
            f"Muse ({control.unavailable()}); it stays stored, and {then}"
        )
    return notes


def safety_flags(choices: SafetyChoices) -> tuple[str, ...]:
    """The ``muse serve`` flags the offered choices add (the approval policy adds none)."""
    flags = (
        CONTROLS[key].host_flag(value) for key, value in choices.values if key in choices.offer
    )
    return tuple(flag for flag in flags if flag is not None)


def stored(choices: SafetyChoices) -> dict[str, str]:
    """The choices as the preference store keeps them, held and unknown ones included."""
    return {**dict(choices.unknown), **dict(choices.values)}


def from_stored(member: Mapping[str, str]) -> tuple[SafetyChoices, list[str]]:
    """Stored choices back (unoffered until ``offered_to``), and what could not be restored."""
    notes: list[str] = []
    choices = SafetyChoices()
    unknown: list[tuple[str, str]] = []
    for key, value in sorted(member.items()):
        control = CONTROLS.get(key)
        if control is None or value not in [entry[0] for entry in control.values]:
            notes.append(
                f"its stored safety setting {quoted(key, _SHOWN)}={quoted(value, _SHOWN)} is "
                "unknown to this muse-acp; it stays stored, and Muse's default applies"
            )
            unknown.append((key, value))
            continue
        choices = choices.with_value(key, value)
    return replace(choices, unknown=tuple(unknown)), notes
