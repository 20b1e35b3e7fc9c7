"""The wire behaviour of each simulated host version, read from that version's MSP bundle.

Contract: ``load_profile(version)`` returns the frozen ``HostProfile`` of a simulated version:
its schema fingerprint and method tables come from that version's own bundle (see
``muse_acp.host.bindings``), imported only when that version is served, and so do its features:
each is read off what the bundle publishes (a method it serves, a member it requires), never
off a list of version strings. Frames are built with the vocabulary models (the newest bundle,
whose shared members are those of every older one: the protocol grew additively); a feature
flag says which later additions an older host must leave out, and the method table decides
which requests exist at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from muse_acp.host.bindings import bindings_for
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
    skill_input: bool
    """Turn input may invoke a skill (a ``skill`` input part)."""

    def serves(self, method: str) -> bool:
        return method in self.host_requests

    def is_command(self, method: str) -> bool:
        spec = self.host_requests.get(method)
        return spec is not None and spec.command


def _required(module: object, model: str, member: str) -> bool:
    fields = getattr(getattr(module, model, None), "model_fields", {})
    return member in fields and fields[member].is_required()


def load_profile(version: HostVersion) -> HostProfile:
    """The profile of ``version``; raises ``KeyError`` for a version without a bundle."""
    bindings = bindings_for(version.version)
    if bindings.version != version.version:
        raise KeyError(version.version)
    return HostProfile(
        version=version,
        fingerprint=bindings.fingerprint,
        host_requests=bindings.host_requests,
        client_notifications=bindings.client_notifications,
        output_refs=bindings.serves("item/readOutput"),
        session_names=bindings.serves("session/rename"),
        pending_kind_required=_required(bindings.module, "PendingRequest", "kind"),
        skill_input="skill" in getattr(bindings.module, "TURN_INPUT_PART_VARIANTS", {}),
    )
