"""What one Muse host offers of the optional features, decided in one place.

Contract: a host is read with the bundle of the schema fingerprint it reported, else of its
version, else the nearest older bundle (a host newer than every bundle: the newest; older than
every bundle or of no known version, with no known fingerprint: none, and no feature). A
feature is on when that bundle declares everything ``NEEDS`` lists for it, the handshake
granted the capabilities it needs (``granted``; None before any handshake, where only
declarations count), and no row of ``versions.KNOWN_BEHAVIOURS`` turns it off for the
host's version. A feature an older bundle declares and the host's bundle no longer does is
``withdrawn`` (Muse removed it), as is one a known behaviour turns off. ``features_of`` is the
only caller of that table's gate (``versions.supports``); every other module reads a
``HostFeatures``. A running host's features are decided once, at its
handshake (``MspHost.features``, with the user's ``MUSE_ACP_TRUST_NEWER_HOST``); where no host
runs yet the same function decides from the probed executable's version; ``NO_FEATURES``
stands for a Muse whose version is not known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Final

from muse_acp.host.bindings import Bindings, bindings_for, parse_version
from muse_acp.host.versions import Feature, supports
from muse_acp_wire.msp_bundles import FINGERPRINTS
from muse_acp_wire.msp_outlines import OUTLINES

__all__ = ["NEEDS", "NO_FEATURES", "HostFeatures", "Needs", "features_of", "first_declaring"]


@dataclass(frozen=True, slots=True)
class Needs:
    """What a bundle must declare, and the handshake grant, for a feature to be on."""

    methods: frozenset[str] = frozenset()
    notifications: frozenset[str] = frozenset()
    models: frozenset[str] = frozenset()
    input_parts: frozenset[str] = frozenset()
    """Turn input part types (``skill``)."""
    capabilities: frozenset[str] = frozenset()
    """Capabilities the handshake must have granted."""
    members: frozenset[tuple[str, str]] = frozenset()
    """Members of models (model, field) the bundle must declare."""

    def declared_by(self, bindings: Bindings) -> bool:
        parts = bindings.outline.variants.get("TURN_INPUT_PART_VARIANTS", ())
        return (
            all(bindings.serves(m) for m in self.methods)
            and self.notifications <= bindings.client_notifications
            and all(bindings.declares(m) for m in self.models)
            and all(part in parts for part in self.input_parts)
            and all(field in bindings.fields(model) for model, field in self.members)
        )


def _needs(*methods: str, notes: tuple[str, ...] = (), models: tuple[str, ...] = ()) -> Needs:
    return Needs(frozenset(methods), frozenset(notes), frozenset(models))


NEEDS: Final[Mapping[Feature, Needs]] = MappingProxyType(
    {
        "storedOutput": _needs("item/readOutput"),
        "mcpOverlay": _needs("session/start"),
        "nativeApprovalPolicy": _needs(
            "session/setApprovalMode", notes=("session/approvalModeChanged",)
        ),
        "planSkill": Needs(methods=frozenset({"turn/start"}), input_parts=frozenset({"skill"})),
        "goals": _needs(
            "goal/set", "goal/pause", "goal/resume", "goal/clear", notes=("session/goalChanged",)
        ),
        "taskControl": _needs("workflow/cancel", "task/stop"),
        "workflowChildren": _needs("workflow/childControl"),
        "subagentStop": _needs("subagent/stop"),
        "workflowPause": _needs("workflow/pause"),
        "workflowResume": _needs("workflow/resume"),
        "planUsage": _needs("usage/read", notes=("usage/changed",)),
        "sessionDelete": _needs("session/delete", notes=("session/deleteCompleted",)),
        "turnForkBoundary": _needs("session/fork", models=("ForkCutPoint",)),
        "workspaceRoots": Needs(
            members=frozenset(
                {("SessionStartParams", "workspace_roots"), ("TurnStartParams", "workspace_roots")}
            )
        ),
        # The client's userInput/engaged (a notification to the host: only its params model
        # shows that the host takes it).
        "questionEngaged": Needs(models=frozenset({"UserInputEngagedParams"})),
    }
)
"""Feature -> what the bundle a host is read with must declare for it."""


@dataclass(frozen=True, slots=True)
class HostFeatures:
    """The optional features one Muse offers, and what they were decided from."""

    version: str | None
    """The version the host reported (or the executable printed); None when not known."""
    offered: frozenset[Feature]
    bundle: str | None = None
    """The bundle the host is read with; None when there is none for it."""
    withdrawn: frozenset[Feature] = frozenset()
    """Features the bundle declares that a known behaviour turns off on this host, or that an
    older bundle declares and this host's no longer does (so a request for one is refused up
    front, not passed to Muse)."""

    def has(self, feature: Feature) -> bool:
        return feature in self.offered


NO_FEATURES: Final = HostFeatures(None, frozenset())


_OLDEST_BUNDLE: Final = min(filter(None, map(parse_version, OUTLINES)))


def _bundle_of(version: str | None, fingerprint: str | None) -> Bindings | None:
    wanted = parse_version(version)
    if fingerprint in FINGERPRINTS:
        return bindings_for(version, fingerprint)
    if wanted is None or wanted < _OLDEST_BUNDLE:
        return None
    return bindings_for(version)


def features_of(
    version: str | None,
    *,
    trust_newer: bool,
    granted: frozenset[str] | None = None,
    fingerprint: str | None = None,
) -> HostFeatures:
    """The features of a Muse reporting ``version`` (and, after a handshake, the schema
    ``fingerprint``) whose handshake granted ``granted`` (None: no handshake yet), with trust in
    newer hosts or not (see the module contract)."""
    bindings = _bundle_of(version, fingerprint)
    if bindings is None:
        return HostFeatures(version, frozenset())
    declared = {
        feature
        for feature, needs in NEEDS.items()
        if needs.declared_by(bindings) and (granted is None or needs.capabilities <= granted)
    }
    offered = frozenset(f for f in declared if supports(f, version, trust_newer=trust_newer))
    dropped = {f for f in NEEDS if f not in declared and _declared_before(f, bindings.version)}
    return HostFeatures(
        version, offered, bundle=bindings.version, withdrawn=frozenset(declared - offered) | dropped
    )


def _declared_before(feature: Feature, bundle: str) -> bool:
    """Whether a bundle older than ``bundle`` declares what ``feature`` needs (Muse removed it)."""
    first = first_declaring(feature)
    return first is not None and (parse_version(first) or (0, 0, 0)) < (
        parse_version(bundle) or (0, 0, 0)
    )


@cache
def first_declaring(feature: Feature) -> str | None:
    """The oldest bundle version declaring what ``feature`` needs (None: no bundle does)."""
    for _, version in sorted((parse_version(v), v) for v in OUTLINES):
        if NEEDS[feature].declared_by(bindings_for(version)):
            return version
    return None
