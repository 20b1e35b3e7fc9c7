"""The one table of host versions verified for each version-gated feature.

A feature is offered only when the host's reported version is in its set. Versions are
compared exactly: a newer, unverified host gets the baseline behaviour rather than a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

__all__ = ["VERIFIED_HOSTS", "Feature", "supports"]

Feature = Literal["storedOutput"]

VERIFIED_HOSTS: Final[Mapping[Feature, frozenset[str]]] = MappingProxyType(
    {
        # item/readOutput with stored output references on tool items.
        "storedOutput": frozenset({"1.2.1"}),
    }
)


def supports(feature: Feature, version: str | None) -> bool:
    """True when ``version`` is a host verified for ``feature``."""
    return version is not None and version in VERIFIED_HOSTS[feature]
