"""The Muse host versions muse-sim can impersonate, and how one is chosen.

Contract: muse-sim plays the versions of ``PLAYED``, each on the surface of the MSP bundle it
names (``muse_acp_wire.msp_bundles``): its own, or for a version of ``PLAYED_ON_OLDER`` an
older bundle's (what it does differently lives in ``state.profile.VERSION_FACTS``). Ingesting a
bundle makes no version playable: a version is played once the simulator knows its behaviour.
``MUSE_SIM_VERSION`` names the simulated host (default: ``DEFAULT_VERSION``);
``resolve_version`` returns its ``HostVersion`` or raises ``UnsupportedVersion`` with a
message fit for the user. A version's release build comes from ``RELEASE_BUILDS`` (the builds
real hosts of that version report), else a made-up ``R0.1``. This module imports no models:
``muse-sim --version`` answers from it alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

__all__ = [
    "DEFAULT_VERSION",
    "HOST_VERSIONS",
    "PLAYED",
    "PLAYED_ON_OLDER",
    "VERSION_ENV",
    "HostVersion",
    "UnsupportedVersion",
    "resolve_version",
]

from muse_acp_wire.msp_bundles import BUNDLES

VERSION_ENV: Final = "MUSE_SIM_VERSION"
DEFAULT_VERSION: Final = "1.2.1"

RELEASE_BUILDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "1.1.1": "R2514.1",
        "1.2.1": "R2847.1",
        "1.3.0": "R3401.1",
        "1.4.2": "R4684.1",
        "1.4.4": "R5419.1",
    }
)
"""The release build real hosts of each version report after the version."""

PLAYED_ON_OLDER: Final[Mapping[str, str]] = MappingProxyType({"1.4.4": "1.4.2", "1.4.13": "1.4.2"})
"""Versions played on an older bundle's surface, with that bundle: 1.4.4 (Muse's stable channel
since 2026-10-10) and 1.4.13 (the newest release ingested) on 1.4.2's, the surface their
simulated behaviour was written against (what they add is in ``state.profile.VERSION_FACTS``).
1.4.13's release build is not known: it reports the made-up one."""

PLAYED: Final[Mapping[str, str]] = MappingProxyType(
    {
        **{version: version for version in ("1.1.1", "1.2.1", "1.3.0", "1.4.2")},
        **PLAYED_ON_OLDER,
    }
)
"""Every version muse-sim plays, oldest first, with the bundle whose surface it serves."""


class HostVersion(NamedTuple):
    """One simulated host build (a named tuple: ``--version`` answers without loading
    ``dataclasses``)."""

    version: str
    """The bare ``X.Y.Z`` that ``initialize`` reports as ``serverInfo.version``."""
    build: str
    """The release build suffix that ``--version`` prints after the version."""

    @property
    def banner(self) -> str:
        """What ``muse-sim --version`` prints."""
        return f"muse {self.version}-{self.build} (simulated by muse-sim)"


HOST_VERSIONS: Final[Mapping[str, HostVersion]] = MappingProxyType(
    {
        version: HostVersion(version, RELEASE_BUILDS.get(version, "R0.1"))
        for version, bundle in PLAYED.items()
        if bundle in BUNDLES
    }
)


class UnsupportedVersion(ValueError):
    """``MUSE_SIM_VERSION`` names a host version muse-sim does not simulate."""


def resolve_version(env: Mapping[str, str]) -> HostVersion:
    """Return the host version selected by ``env`` (``MUSE_SIM_VERSION``).

    Raises:
        UnsupportedVersion: the variable is set to a version that is not simulated.
    """
    wanted = env.get(VERSION_ENV, "").strip() or DEFAULT_VERSION
    found = HOST_VERSIONS.get(wanted)
    if found is None:
        supported = ", ".join(HOST_VERSIONS)
        raise UnsupportedVersion(
            f"{VERSION_ENV}={wanted!r} is not a simulated host version (supported: {supported})"
        )
    return found
