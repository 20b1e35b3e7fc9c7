"""The one table of what Muse hosts are known to do that their declarations do not show.

A feature is normally decided by what the bundle a host is read with declares
(``host.features``). A row here narrows that for a behaviour a bundle cannot show, by version:
``verified`` lists the only hosts a feature is offered on (with one opening the user controls:
with ``MUSE_ACP_TRUST_NEWER_HOST=1``, ``trust_newer``, a host newer than every verified one
gets it too; older and in-between unverified hosts never do), and ``off`` gives version ranges
(from ``low`` up to but not including ``below``; ``None``: open-ended) where a declared
feature is absent or broken. A feature without a row follows its declarations alone.
``host.features`` alone asks ``supports``: everyone else reads the features it decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from muse_acp.host.bindings import parse_version

__all__ = [
    "KNOWN_BEHAVIOURS",
    "VERIFIED_HOSTS",
    "Feature",
    "Known",
    "newer_than_verified",
    "supports",
]

Feature = Literal[
    "storedOutput",
    "mcpOverlay",
    "nativeApprovalPolicy",
    "planSkill",
    "goals",
    "taskControl",
    "workflowChildren",
    "subagentStop",
    "workflowPause",
    "workflowResume",
    "planUsage",
    "sessionDelete",
    "turnForkBoundary",
    "workspaceRoots",
    "questionEngaged",
]

Version = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Known:
    """What is known of one feature beyond its declarations (see the module contract)."""

    verified: frozenset[str] = frozenset()
    """When not empty: the only hosts (exact versions) the feature is offered on."""
    off: tuple[tuple[Version | None, Version | None], ...] = ()
    """Version ranges ``(low, below)`` where the feature is off whatever the bundle declares."""


KNOWN_BEHAVIOURS: Final[Mapping[Feature, Known]] = MappingProxyType(
    {
        # Stored output references on tool items, read back live with item/readOutput: its
        # specification offers it only where it was verified (the 1.2.1 captures).
        "storedOutput": Known(verified=frozenset({"1.2.1"})),
        # MCP servers through a private settings file that XDG_CONFIG_HOME points the host at:
        # no declaration shows it; the reference adapter proved it on these hosts.
        "mcpOverlay": Known(verified=frozenset({"1.1.1", "1.2.1"})),
        # The bundled:plan skill ships from 1.4.0 (research §2.14), although the skill input
        # part is declared from 1.3.0.
        "planSkill": Known(off=((None, (1, 4, 0)),)),
        # session/delete exists in 1.4.1 and 1.4.2 only: Muse's official 1.4.4 and 1.4.13
        # declarations have no session/delete (research §2.14, as corrected).
        "sessionDelete": Known(off=(((1, 4, 3), None),)),
        # A fork cut after an earlier turn fails with forkBoundaryInvalid on 1.4.3 and 1.4.4,
        # although their schema allows it (meta-models/muse-code-sdk#97).
        "turnForkBoundary": Known(off=(((1, 4, 3), (1, 4, 5)),)),
    }
)

VERIFIED_HOSTS: Final[Mapping[Feature, frozenset[str]]] = MappingProxyType(
    {feature: known.verified for feature, known in KNOWN_BEHAVIOURS.items() if known.verified}
)
"""The features offered only on verified hosts, with those hosts."""


def newer_than_verified(feature: Feature, version: str | None) -> bool:
    """True when ``feature`` is offered only on verified hosts and ``version`` is newer than
    every one of them."""
    reported = parse_version(version)
    verified = [parse_version(v) for v in VERIFIED_HOSTS.get(feature, ())]
    return (
        reported is not None
        and bool(verified)
        and all(v is not None and reported > v for v in verified)
    )


def _within(version: Version, low: Version | None, below: Version | None) -> bool:
    return (low is None or version >= low) and (below is None or version < below)


def supports(feature: Feature, version: str | None, *, trust_newer: bool = False) -> bool:
    """False when a row of ``KNOWN_BEHAVIOURS`` turns ``feature`` off for ``version``: a
    verified-only feature on an unverified host (unless newer than all of them and trusted), or
    a version in one of its ``off`` ranges. A version that is not known gets nothing."""
    reported = parse_version(version)
    if reported is None:
        return False
    known = KNOWN_BEHAVIOURS.get(feature, Known())
    trusted = trust_newer and newer_than_verified(feature, version)
    if known.verified and version not in known.verified and not trusted:
        return False
    return not any(_within(reported, low, below) for low, below in known.off)
