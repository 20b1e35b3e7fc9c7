"""What one Muse host offers of the version-gated features, decided in one place.

Contract: ``features_of`` is the only caller of the version gate (``versions.supports``); every
other module reads a ``HostFeatures``. A running host's features are decided once, when its
handshake reports its version (``MspHost.features``, with the user's
``MUSE_ACP_TRUST_NEWER_HOST``). Where no host runs yet (what ``initialize`` advertises, which
options a session offers, how MCP servers will reach the next host) the same function decides
from the probed executable's version; ``NO_FEATURES`` stands for a Muse whose version is not
known, which gets none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from muse_acp.host.versions import VERIFIED_HOSTS, Feature, supports

__all__ = ["NO_FEATURES", "HostFeatures", "features_of"]


@dataclass(frozen=True, slots=True)
class HostFeatures:
    """The version-gated features one Muse offers, and the version they were decided for."""

    version: str | None
    """The version the host reported (or the executable printed); None when not known."""
    offered: frozenset[Feature]

    def has(self, feature: Feature) -> bool:
        return feature in self.offered


NO_FEATURES: Final = HostFeatures(None, frozenset())


def features_of(version: str | None, *, trust_newer: bool) -> HostFeatures:
    """The features of a Muse reporting ``version``: those verified for it, and, when the user
    trusts newer hosts (``trust_newer``), those it is newer than every verified host of."""
    offered = (f for f in VERIFIED_HOSTS if supports(f, version, trust_newer=trust_newer))
    return HostFeatures(version, frozenset(offered))
