"""Behaviours of particular real hosts that muse-sim plays on request (``MUSE_SIM_QUIRKS``).

Contract: ``MUSE_SIM_QUIRKS`` is a comma-separated list of quirk names (docs/muse-sim.md lists
them, each with the real host that showed it); ``parse_quirks`` turns it into a frozen
``Quirks`` value or raises ``QuirkSyntaxError`` for a name it does not know (the command line
then exits 2). Any quirk may be played on any simulated version. The host consults the value
at fixed points; nothing else in muse-sim reads the variable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["NO_QUIRKS", "QUIRKS", "QUIRKS_ENV", "QuirkSyntaxError", "Quirks", "parse_quirks"]

QUIRKS_ENV: Final = "MUSE_SIM_QUIRKS"
QUIRKS: Final = ("drop-initialized", "ack-before-started", "no-turn-started", "orphan-tools")
"""Every quirk name, in the order the documentation lists them."""


class QuirkSyntaxError(ValueError):
    """``MUSE_SIM_QUIRKS`` names something that is not a known quirk."""


@dataclass(frozen=True, slots=True)
class Quirks:
    """The quirks in effect for this process; the default plays none."""

    names: frozenset[str] = frozenset()

    @property
    def drop_initialized(self) -> bool:
        return "drop-initialized" in self.names

    @property
    def ack_before_started(self) -> bool:
        return "ack-before-started" in self.names

    @property
    def no_turn_started(self) -> bool:
        return "no-turn-started" in self.names

    @property
    def orphan_tools(self) -> bool:
        return "orphan-tools" in self.names


NO_QUIRKS: Final = Quirks()


def parse_quirks(text: str) -> Quirks:
    """Parse a ``MUSE_SIM_QUIRKS`` value (see the module docstring).

    Raises:
        QuirkSyntaxError: an entry is not a known quirk name.
    """
    names: set[str] = set()
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        if entry not in QUIRKS:
            raise QuirkSyntaxError(f"unknown quirk {entry!r} (quirks: {', '.join(QUIRKS)})")
        names.add(entry)
    return Quirks(frozenset(names))
