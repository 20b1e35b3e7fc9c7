"""The directives of delegated work: workflows and native subagents (``sim:workflow``,
``sim:subagent`` and their variants).

Contract: ``DELEGATION_PARSERS`` maps each directive name to the parser of the rest of its line
(None for a missing argument), as ``directives`` does for the others; a parsed line is a
``Workflow`` or a ``Subagent``. docs/muse-sim.md lists what each one plays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, TypeAlias

__all__ = ["DELEGATION_PARSERS", "Subagent", "Workflow"]


@dataclass(frozen=True, slots=True)
class Workflow:
    """A workflow that outlives its turn (``sim:workflow TEXT``), or one with two children, the
    second failing (``sim:workflow-children TEXT``, ``workflow_runs``)."""

    text: str
    children: bool = False


@dataclass(frozen=True, slots=True)
class Subagent:
    """Muse delegates to a native subagent (``sim:subagent OBJECTIVE``), which fails with
    ``sim:subagent-fails OBJECTIVE``, runs until stopped with ``sim:subagent-hold OBJECTIVE``
    and runs a shell command that needs approval in its own session with
    ``sim:subagent-approve COMMAND`` (``subagents``)."""

    objective: str
    fails: bool = False
    hold: bool = False
    command: str | None = None
    """The command the subagent runs (``sim:subagent-approve``), None for none."""


Delegated: TypeAlias = Workflow | Subagent


def _text(make: Callable[[str], Delegated]) -> Callable[[str], Delegated | None]:
    return lambda arg: make(arg) if arg else None


DELEGATION_PARSERS: Final[Mapping[str, Callable[[str], Delegated | None]]] = MappingProxyType(
    {
        "workflow": _text(Workflow),
        "workflow-children": _text(lambda text: Workflow(text, children=True)),
        "subagent": _text(Subagent),
        "subagent-fails": _text(lambda objective: Subagent(objective, fails=True)),
        "subagent-hold": _text(lambda objective: Subagent(objective, hold=True)),
        "subagent-approve": _text(lambda command: Subagent(f"run {command}", command=command)),
    }
)
"""Directive name -> parser of the rest of its line (None when the argument is missing)."""
