"""The one table of host versions verified for each version-gated feature.

A feature is offered only when the host's reported version is in its set. Versions are
compared exactly, so a host that is not verified gets the baseline behaviour rather than a
guess, with one opening the user controls: with ``MUSE_ACP_TRUST_NEWER_HOST=1``
(``trust_newer``), a host newer than every version verified for a feature gets it too. Older
and in-between unverified hosts never do. ``host.features`` alone asks ``supports``: everyone
else reads the features it decided for a host.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

from muse_acp.host.bindings import parse_version

__all__ = ["VERIFIED_HOSTS", "Feature", "newer_than_verified", "supports"]

Feature = Literal[
    "storedOutput",
    "mcpOverlay",
    "nativeApprovalPolicy",
    "planSkill",
    "goals",
    "taskControl",
    "planUsage",
]

VERIFIED_HOSTS: Final[Mapping[Feature, frozenset[str]]] = MappingProxyType(
    {
        # item/readOutput with stored output references on tool items, read back live.
        "storedOutput": frozenset({"1.2.1"}),
        # goal/{set,pause,resume,clear} with session/goalChanged (MSP added them in 1.3.0).
        "goals": frozenset({"1.3.0", "1.4.2"}),
        # workflow/cancel for a running workflow and task/stop for a background tool task
        # (MSP added task/* and workflow/cancel in 1.3.0).
        "taskControl": frozenset({"1.3.0", "1.4.2"}),
        # usage/read (and usage/changed) with the account's subscription usage.
        "planUsage": frozenset({"1.3.0", "1.4.2"}),
        # session/setApprovalMode with the four closed ApprovalMode values, announced back by
        # session/approvalModeChanged and kept with the session.
        "nativeApprovalPolicy": frozenset({"1.1.1", "1.2.1", "1.3.0", "1.4.2"}),
        # Plan mode as Muse's bundled:plan skill, sent as a skill input part of turn/start.
        "planSkill": frozenset({"1.4.2"}),
        # MCP servers (stdio and streamable HTTP) read from a private settings file that
        # XDG_CONFIG_HOME points the host at; the reference adapter proved it on these hosts.
        "mcpOverlay": frozenset({"1.1.1", "1.2.1"}),
    }
)


def newer_than_verified(feature: Feature, version: str | None) -> bool:
    """True when ``version`` is newer than every host verified for ``feature``."""
    reported = parse_version(version)
    verified = [parse_version(v) for v in VERIFIED_HOSTS[feature]]
    return reported is not None and all(v is not None and reported > v for v in verified)


def supports(feature: Feature, version: str | None, *, trust_newer: bool = False) -> bool:
    """True when ``version`` is verified for ``feature``, or newer than all verified hosts
    and the user chose to trust newer hosts."""
    if version is None:
        return False
    if version in VERIFIED_HOSTS[feature]:
        return True
    return trust_newer and newer_than_verified(feature, version)
