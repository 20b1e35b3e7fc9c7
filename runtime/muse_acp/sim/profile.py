"""The wire behaviour of each simulated host version, read from the generated MSP bindings.

Contract: ``load_profile(version)`` returns the frozen ``HostProfile`` of a simulated version:
its schema fingerprint and method tables come from that version's generated module
(``muse_acp_wire.msp_1_1_1`` or ``msp_1_2_1``), imported only when that version is served.
Frames are built with the 1.2.1 models, whose shared members are identical to 1.1.1's (the
protocol grew additively); the profile's feature flags say which 1.2.1 additions a 1.1.1 host
must leave out, and its method table decides which requests exist at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from muse_acp.sim.versions import HostVersion
from muse_acp_wire._base import NotificationSpec, RequestSpec

__all__ = ["HostProfile", "load_profile"]


@dataclass(frozen=True, slots=True)
class HostProfile:
    """What a client can observe of one simulated host version."""

    version: HostVersion
    fingerprint: str
    host_requests: Mapping[str, RequestSpec]
    """Requests the host serves (method -> models), as published by that version's schema."""
    client_notifications: Mapping[str, NotificationSpec]
    """Notifications the host may send, as published by that version's schema."""
    output_refs: bool
    """Tool items carry ``outputRef`` and ``item/readOutput`` serves the stored bytes."""
    session_names: bool
    """Sessions have slug names (``session/rename``) and report ``name``/``firstUserPrompt``."""
    pending_kind_required: bool
    """``pendingRequests`` entries must say which kind of request they are."""

    def serves(self, method: str) -> bool:
        return method in self.host_requests

    def is_command(self, method: str) -> bool:
        spec = self.host_requests.get(method)
        return spec is not None and spec.command


def _profile_1_1_1(version: HostVersion) -> HostProfile:
    from muse_acp_wire import msp_1_1_1 as wire

    return HostProfile(
        version=version,
        fingerprint=wire.SCHEMA_FINGERPRINT,
        host_requests=wire.HOST_REQUESTS,
        client_notifications=wire.CLIENT_NOTIFICATIONS,
        output_refs=False,
        session_names=False,
        pending_kind_required=False,
    )


def _profile_1_2_1(version: HostVersion) -> HostProfile:
    from muse_acp_wire import msp_1_2_1 as wire

    return HostProfile(
        version=version,
        fingerprint=wire.SCHEMA_FINGERPRINT,
        host_requests=wire.HOST_REQUESTS,
        client_notifications=wire.CLIENT_NOTIFICATIONS,
        output_refs=True,
        session_names=True,
        pending_kind_required=True,
    )


_LOADERS: Final[Mapping[str, Callable[[HostVersion], HostProfile]]] = MappingProxyType(
    {"1.1.1": _profile_1_1_1, "1.2.1": _profile_1_2_1}
)


def load_profile(version: HostVersion) -> HostProfile:
    """The profile of ``version``; raises ``KeyError`` for a version without bindings."""
    return _LOADERS[version.version](version)
