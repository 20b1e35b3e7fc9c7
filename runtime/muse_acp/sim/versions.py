"""The Muse host versions muse-sim can impersonate, and how one is chosen.

Contract: ``MUSE_SIM_VERSION`` names the simulated host (``1.1.1`` or ``1.2.1``, default
``1.2.1``); ``resolve_version`` returns its ``HostVersion`` or raises ``UnsupportedVersion`` with
a message fit for the user. This module imports nothing heavy: ``muse-sim --version`` answers
from it alone, without loading the wire models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = [
    "DEFAULT_VERSION",
    "HOST_VERSIONS",
    "VERSION_ENV",
    "HostVersion",
    "UnsupportedVersion",
    "resolve_version",
]

VERSION_ENV: Final = "MUSE_SIM_VERSION"
DEFAULT_VERSION: Final = "1.2.1"


@dataclass(frozen=True, slots=True)
class HostVersion:
    """One simulated host build."""

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
        "1.1.1": HostVersion("1.1.1", "R2514.1"),
        "1.2.1": HostVersion("1.2.1", "R2847.1"),
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
