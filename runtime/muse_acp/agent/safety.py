"""Safety config options: Muse's sandbox, the sandbox's network, workspace writes, shell and the
host's native approval policy.

Contract (pure): ``SafetyChoices`` is what the user chose, always valid, with the controls the
installed Muse offers (``offer``, left out of equality: it describes the host, not the choice).
A control is offered only when the host can apply it: the four flag controls when
``muse serve --help`` lists their flag, the approval policy when the host version is verified
for ``nativeApprovalPolicy`` (it is set on the wire with ``session/setApprovalMode``, since
``serve`` has no flag for it). ``safety_options`` lists the offered controls as select options,
after the mode, model and effort options. ``apply_safety`` validates a change (-32602 naming
the values, or saying why the control is not offered). ``check_combination`` refuses settings
that together leave nothing between the model and the machine (-32602 saying why and what to
change). ``safety_flags`` are the ``muse serve`` flags of the choices; a change of them, or of
the approval policy, is applied by starting the session's host again (see ``settings``).
``stored``/``from_stored`` are the preference store's form and back, with a sentence for
each stored value that can no longer be applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from muse_acp.agent.failures import Failure
from muse_acp.agent.select_options import SelectValue, select_option
from muse_acp.host.versions import supports
from muse_acp.rpc.errors import INVALID_PARAMS, RpcError
from muse_acp.text import quoted
from muse_acp_wire import acp

__all__ = [
    "APPROVAL_POLICY",
    "CONTROLS",
    "SafetyChoices",
    "SafetyControl",
    "apply_safety",
    "check_combination",
    "from_stored",
    "offered_controls",
    "safety_flags",
    "safety_options",
    "stored",
]

APPROVAL_POLICY: Final = "approvalPolicy"
_SHOWN: Final = 80


@dataclass(frozen=True, slots=True)
class SafetyControl:
    """One safety option: its values (the first is Muse's own default) and the ``muse serve``
    flag that applies a value other than the default (None: set on the wire instead)."""

    id: str
    name: str
    description: str
    values: tuple[SelectValue, ...]
    flag: str | None

    @property
    def default(self) -> str:
        return self.values[0][0]

    def host_flag(self, value: str) -> str | None:
        if self.flag is None or value == self.default:
            return None
        # A flag with a value is written as one word, so probing it needs no value grammar.
        return f"{self.flag}={value}" if self.flag == "--sandbox-network" else self.flag


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
            ),
        )
    }
)


def offered_controls(
    serve_flags: frozenset[str], version: str | None, *, trust_newer: bool = False
) -> frozenset[str]:
    """The controls an installed Muse can apply (see the module contract)."""
    offered = {c.id for c in CONTROLS.values() if c.flag is not None and c.flag in serve_flags}
    if supports("nativeApprovalPolicy", version, trust_newer=trust_newer):
        offered.add(APPROVAL_POLICY)
    return frozenset(offered)


@dataclass(frozen=True, slots=True)
class SafetyChoices:
    """The chosen value of each control; a control never chosen has none (Muse's default)."""

    values: tuple[tuple[str, str], ...] = ()
    """(control id, value) pairs, sorted by id, none of them a control's default."""
    offer: frozenset[str] = field(default=frozenset(), compare=False)
    """The controls the installed Muse offers."""

    def value(self, control_id: str) -> str:
        return dict(self.values).get(control_id, CONTROLS[control_id].default)

    def chosen(self, control_id: str) -> bool:
        return control_id in dict(self.values)

    def with_value(self, control_id: str, value: str) -> SafetyChoices:
        values = dict(self.values)
        if value == CONTROLS[control_id].default and control_id != APPROVAL_POLICY:
            values.pop(control_id, None)
        else:
            # A policy once chosen is sent even when it is Muse's default: Muse keeps the last
            # policy set on a session, so going back to the default has to be said.
            values[control_id] = value
        return replace(self, values=tuple(sorted(values.items())))

    def offered_to(self, offer: frozenset[str]) -> SafetyChoices:
        """These choices on a host offering ``offer``: what it cannot apply is dropped."""
        kept = tuple((key, value) for key, value in self.values if key in offer)
        return SafetyChoices(kept, offer)


def safety_options(choices: SafetyChoices) -> list[acp.SelectSessionConfigOption]:
    """The offered controls as select options, in ``CONTROLS`` order."""
    options = []
    for control in CONTROLS.values():
        if control.id in choices.offer:
            option = select_option(
                control.id,
                control.name,
                None,
                choices.value(control.id),
                list(control.values),
            )
            option.description = control.description
            options.append(option)
    return options


def _refused(kind: str, message: str) -> RpcError:
    return Failure(kind, "client", retryable=False, phase="preparing").error(
        message, INVALID_PARAMS
    )


def apply_safety(choices: SafetyChoices, control_id: str, value: str) -> SafetyChoices:
    """``choices`` with ``control_id`` set to ``value``.

    Raises:
        RpcError: ``INVALID_PARAMS`` when the installed Muse does not offer the control, or for
            a value it does not have.
    """
    control = CONTROLS[control_id]
    if control_id not in choices.offer:
        why = (
            f"its `muse serve --help` does not list {control.flag}"
            if control.flag is not None
            else "its version is not verified for session/setApprovalMode"
        )
        raise _refused(
            "safetyControlUnavailable",
            f"the safety option {control_id!r} is not offered for the installed Muse ({why}); "
            "choose among the options this session lists",
        )
    allowed = [entry[0] for entry in control.values]
    if value not in allowed:
        raise RpcError(
            INVALID_PARAMS,
            f"{control_id} cannot be {quoted(value, _SHOWN)}; choose one of {', '.join(allowed)}",
        )
    return choices.with_value(control_id, value)


def check_combination(choices: SafetyChoices, auto_approve: bool) -> None:
    """Refuse settings that leave no safeguard at all between the model and the machine.

    ``auto_approve`` is True when the session's mode grants every approval itself.

    Raises:
        RpcError: ``INVALID_PARAMS`` saying what the combination would allow and how to avoid it.
    """
    unattended = auto_approve or choices.value(APPROVAL_POLICY) == "allowAll"
    if not unattended or choices.value("sandbox") != "disabled":
        return
    who = "Auto-approve mode" if auto_approve else "the 'Allow everything' approval policy"
    raise _refused(
        "unsafeSafetyCombination",
        f"this change was not applied: with the sandbox disabled and {who}, Muse would run any "
        "command with your full file and network access and nobody would be asked first. Keep "
        "the sandbox enabled, or choose a mode and approval policy that ask you.",
    )


def safety_flags(choices: SafetyChoices) -> tuple[str, ...]:
    """The ``muse serve`` flags the choices add (the approval policy adds none)."""
    flags = (CONTROLS[key].host_flag(value) for key, value in choices.values if key in CONTROLS)
    return tuple(flag for flag in flags if flag is not None)


def stored(choices: SafetyChoices) -> dict[str, str]:
    """The choices as the preference store keeps them."""
    return dict(choices.values)


def from_stored(member: Mapping[str, str]) -> tuple[SafetyChoices, list[str]]:
    """Stored choices back (unoffered until ``offered_to``), and what could not be restored."""
    notes: list[str] = []
    choices = SafetyChoices()
    for key, value in sorted(member.items()):
        control = CONTROLS.get(key)
        if control is None or value not in [entry[0] for entry in control.values]:
            notes.append(
                f"its stored safety setting {quoted(key, _SHOWN)}={quoted(value, _SHOWN)} is "
                "unknown; Muse's default applies"
            )
            continue
        choices = choices.with_value(key, value)
    return choices, notes
