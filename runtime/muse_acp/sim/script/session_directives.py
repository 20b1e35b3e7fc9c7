"""The directives that act on the session rather than call a tool: its name, its settings,
what other clients switch, and what the host does to the view (``sim:name``, ``sim:flags``,
``sim:roots``, ``sim:switch-model``, ``sim:switch-approval``, ``sim:gap``, ``sim:viewlost``,
``sim:autocompact``).

Contract: ``SESSION_PARSERS`` maps each directive name to the parser of the rest of its line
(None when the argument is unusable), as ``directives`` does for the others. Gaps are bounded by
``MAX_GAP_EVENTS``; a name must have at least one letter or digit; an approval mode must be one
of ``APPROVAL_MODES``. docs/muse-sim.md lists what each one plays.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, TypeAlias

__all__ = [
    "APPROVAL_MODES",
    "MAX_GAP_EVENTS",
    "SESSION_PARSERS",
    "AutoCompact",
    "Flags",
    "Gap",
    "Name",
    "Roots",
    "SwitchApproval",
    "SwitchModel",
    "ViewLost",
    "slug",
]

MAX_GAP_EVENTS: Final = 1000
"""One ``view/page`` (limit 1000) can return every missed event."""
APPROVAL_MODES: Final = frozenset({"allowAll", "promptUnmatched", "onRequest", "denyUnmatched"})
SLUG_LENGTH: Final = 64
_NOT_SLUG: Final = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Gap:
    """``count`` view events the client never gets live (``sim:gap N``)."""

    count: int


@dataclass(frozen=True, slots=True)
class Name:
    """The model names the session (``sim:name TEXT``)."""

    text: str

    @property
    def slug(self) -> str:
        return slug(self.text)


@dataclass(frozen=True, slots=True)
class ViewLost:
    """The host reports the live view unavailable (``sim:viewlost``)."""


@dataclass(frozen=True, slots=True)
class SwitchModel:
    """Another client switches the session's model (``sim:switch-model MODEL``)."""

    model_id: str


@dataclass(frozen=True, slots=True)
class SwitchApproval:
    """Another client switches the session's approval mode (``sim:switch-approval MODE``)."""

    mode: str


@dataclass(frozen=True, slots=True)
class AutoCompact:
    """Muse compacts the session's history by itself mid-turn (``sim:autocompact``)."""


@dataclass(frozen=True, slots=True)
class Flags:
    """The model reports the host's safety flags and approval mode (``sim:flags``)."""


@dataclass(frozen=True, slots=True)
class Roots:
    """The model names the session's workspace roots (``sim:roots``)."""


SessionDirective: TypeAlias = (
    Gap | Name | ViewLost | SwitchModel | SwitchApproval | AutoCompact | Flags | Roots
)


def slug(text: str) -> str:
    """``text`` as a session name: lower-case letters and digits, runs of anything else one
    hyphen, no hyphen first or last, at most ``SLUG_LENGTH`` characters ("" if nothing is left)."""
    ascii_text = unicodedata.normalize("NFKD", text.lower()).encode("ascii", "ignore").decode()
    return _NOT_SLUG.sub("-", ascii_text).strip("-")[:SLUG_LENGTH].rstrip("-")


def _gap(arg: str) -> SessionDirective | None:
    count = int(arg) if arg.isascii() and arg.isdigit() and len(arg) <= 4 else 0
    return Gap(count) if 1 <= count <= MAX_GAP_EVENTS else None


def _name(arg: str) -> SessionDirective | None:
    return Name(arg) if slug(arg) else None


def _switch_approval(arg: str) -> SessionDirective | None:
    return SwitchApproval(arg) if arg in APPROVAL_MODES else None


SESSION_PARSERS: Final[Mapping[str, Callable[[str], SessionDirective | None]]] = MappingProxyType(
    {
        "autocompact": lambda arg: AutoCompact() if not arg else None,
        "gap": _gap,
        "name": _name,
        "viewlost": lambda arg: ViewLost() if not arg else None,
        "switch-model": lambda arg: SwitchModel(arg) if arg else None,
        "switch-approval": _switch_approval,
        "flags": lambda arg: Flags() if not arg else None,
        "roots": lambda arg: Roots() if not arg else None,
    }
)
"""Directive name -> parser of the rest of its line."""
