"""The wire behaviour of each simulated host version, read from that version's MSP bundle.

Contract: ``load_profile(version)`` returns the frozen ``HostProfile`` of a simulated version:
its fingerprint, method tables and features read off what its own bundle publishes
(``muse_acp.host.bindings``), never off a list of version strings. Facts a bundle does not carry
live in ``VERSION_FACTS``, one row per version; a version without a row takes the nearest older
row, so a bundle added to ``spec/msp/`` is playable with no edit here. A version played on
an older bundle's surface (``options.versions.PLAYED_ON_OLDER``) serves that bundle's surface
with its own row's fingerprint, less the methods and notifications its row withdraws, plus the
newer notifications its row adds (sent) and takes (from a client) and the newer methods it
serves (read off its own bundle). Frames are built with the vocabulary models; feature flags
say which later additions an older host leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from muse_acp.host.bindings import Bindings, bindings_for, parse_version
from muse_acp.sim.options.versions import PLAYED_ON_OLDER, HostVersion

__all__ = ["VERSION_FACTS", "HostProfile", "VersionFacts", "facts_for", "load_profile"]


@dataclass(frozen=True, slots=True)
class VersionFacts:
    """What a host version does that its generated bindings do not say."""

    grantable: tuple[str, ...]
    """Capabilities the host grants when asked: the bundle's ``capabilities.grantable``, in
    its order (the generated modules do not carry that list)."""
    granted_unasked: tuple[str, ...] = ()
    """Capabilities the host grants by its own policy, asked or not."""
    protected_writes: bool = False
    """Writes to protected paths ask a ``protectedWrite`` approval offering only once-scoped
    choices."""
    stage_race: bool = False
    """After the first stage of a multi-stage shell approval is decided, the host may settle the
    next stage itself and move on without sending an ``approval/updated`` for it."""
    fingerprint: str | None = None
    """The schema fingerprint the version reports, for a version played on an older bundle."""
    withdrawn: frozenset[str] = frozenset()
    """Methods and notifications of that older bundle the version no longer has."""
    fork_after_last_turn_only: bool = False
    """``session/fork`` refuses a cut after any turn but the last (``forkBoundaryInvalid``),
    although the schema allows one."""
    added: frozenset[str] = frozenset()
    """Notifications of the version's own bundle, beyond that older surface, that it sends."""
    taken: frozenset[str] = frozenset()
    """Notifications of the version's own bundle, beyond that older surface, that a client may
    send it (``userInput/engaged``)."""
    subagent_origin: bool = False
    """A subagent's approval is asked on its parent session naming the subagent
    (``subagentOrigin``, first in Muse's own 1.3.0 declarations)."""
    served: frozenset[str] = frozenset()
    """Methods of the version's own bundle, beyond that older surface, that it serves (the
    controls muse-acp uses: ``subagent/stop``, ``workflow/pause``, ``workflow/resume``)."""
    experimental: frozenset[str] = frozenset()
    """Experimental methods the version serves to a connection that opted in, which a stable
    bundle does not list (``account/read``, recorded from 1.1.1 and 1.4.0 hosts)."""


_ACCOUNT: Final = frozenset({"account/read"})
"""Experimental in every release; the ingested bundles hold the stable surface only."""

VERSION_FACTS: Final[Mapping[str, VersionFacts]] = MappingProxyType(
    {
        "1.1.1": VersionFacts(grantable=("userShell",)),
        "1.2.1": VersionFacts(grantable=("userShell",)),
        # Muse's own 1.3.0 declarations: the grants they list, a subagent's approvals naming
        # it; account/read is experimental.
        "1.3.0": VersionFacts(
            grantable=("userShell", "sessionMcp", "sessionListStream"),
            subagent_origin=True,
            experimental=_ACCOUNT,
        ),
        "1.4.2": VersionFacts(
            grantable=("userShell", "sessionMcp", "sessionListStream", "feedback"),
            granted_unasked=("sessionListStream",),
            protected_writes=True,
            stage_race=True,
            subagent_origin=True,
            experimental=_ACCOUNT,
        ),
        # Played on the 1.4.2 surface: the official 1.4.4 declarations (stable fingerprint
        # below) no longer have session/delete, and forks cut after an earlier turn fail there
        # (meta-models/muse-code-sdk#97).
        "1.4.4": VersionFacts(
            grantable=("userShell", "sessionMcp", "sessionListStream", "feedback"),
            granted_unasked=("sessionListStream",),
            protected_writes=True,
            stage_race=True,
            subagent_origin=True,
            fingerprint="sha256:7c94f153c41659cb3f1bd3c3e04438be254644cb2a97d65d48edc7449b74858a",
            withdrawn=frozenset({"session/delete", "session/deleteCompleted"}),
            fork_after_last_turn_only=True,
            taken=frozenset({"userInput/engaged"}),
            served=frozenset({"subagent/stop", "workflow/pause"}),
            experimental=_ACCOUNT,
        ),
        # The newest release ingested, played on the 1.4.2 surface too: no session/delete, forks
        # at an earlier turn work again, and model retries and Muse's reviewer are announced.
        "1.4.13": VersionFacts(
            grantable=("userShell", "sessionMcp", "sessionListStream", "feedback"),
            granted_unasked=("sessionListStream",),
            protected_writes=True,
            stage_race=True,
            subagent_origin=True,
            fingerprint="sha256:7fddaf646dbc317e5fcac0785e135eb04df14fbb0db1863089dfd6da21730e5b",
            withdrawn=frozenset({"session/delete", "session/deleteCompleted"}),
            added=frozenset({"turn/modelRetryScheduled", "approval/reviewing"}),
            taken=frozenset({"userInput/engaged"}),
            served=frozenset({"subagent/stop", "workflow/pause", "workflow/resume"}),
            experimental=_ACCOUNT,
        ),
    }
)
"""The one table of per-version facts the bundles' generated modules do not carry."""


def facts_for(version: str) -> VersionFacts:
    """The row of ``version``, else of the nearest older version with one (else the oldest)."""
    wanted = parse_version(version)
    rows = sorted((parse_version(key), key) for key in VERSION_FACTS)
    older = [key for number, key in rows if number is not None and wanted and number <= wanted]
    return VERSION_FACTS[older[-1] if older else rows[0][1]]


@dataclass(frozen=True, slots=True)
class HostProfile:
    """What a client can observe of one simulated host version."""

    version: HostVersion
    fingerprint: str
    host_requests: Mapping[str, bool]
    """Requests the host serves (method -> whether it is a command), as published by that
    version's schema."""
    client_notifications: frozenset[str]
    """Notifications the host may send, as published by that version's schema."""
    output_refs: bool
    """Tool items carry ``outputRef`` and ``item/readOutput`` serves the stored bytes."""
    session_names: bool
    """Sessions have slug names (``session/rename``) and report ``name``/``firstUserPrompt``."""
    titles: bool
    """Sessions report a ``title``."""
    pending_kind_required: bool
    """``pendingRequests`` entries must say which kind of request they are."""
    skill_input: bool
    """Turn input may invoke a skill (a ``skill`` input part)."""
    change_reasons: bool
    """``approval/updated`` changes may say why they happened (``change.reason``)."""
    cache_totals: bool
    """The session's token totals include its cache reads and writes."""
    session_cost: bool
    """The session's token totals carry the host's cost estimate (``cumulative.cost``)."""
    workspace_roots: bool
    """``session/start`` and ``turn/start`` take several ``workspaceRoots`` (older hosts ignore
    the member, as members a host does not know)."""
    effort_tiers: bool
    """``model/list`` rows carry each model's own reasoning-effort tiers and default, and a tier
    the session's model lacks is refused (``state.catalog``)."""
    session_kinds: bool
    """Session rows say their ``kind`` (``root`` or ``subagent``) and a subagent's its
    ``parentSessionId``, and ``session/list`` lists subagents' sessions too (read off the
    version's own bundle: 1.4.4 on)."""
    surface: Bindings
    """The bundle whose surface the version serves (``declares`` reads its members)."""
    facts: VersionFacts
    """The facts of ``VERSION_FACTS`` for this version."""

    def serves(self, method: str) -> bool:
        return method in self.host_requests

    def declares(self, model: str, field: str) -> bool:
        """Whether the served surface's ``model`` (by the vocabulary's name, which the bundles
        after 1.4.2 share for the params of notifications) has the member ``field`` (snake
        case): a member it lacks is one this version's host never sends."""
        return field in self.surface.fields(model)

    def publishes(self, method: str) -> bool:
        """Whether this version's schema lets the host send the notification ``method``."""
        return method in self.client_notifications

    def takes(self, notification: str) -> bool:
        """Whether a client may send this version the notification (beyond ``initialized``)."""
        return notification in self.facts.taken

    def is_command(self, method: str) -> bool:
        return self.host_requests.get(method, False)

    def grants(self, requested: set[str]) -> list[str]:
        """The capabilities granted for ``requested``, in the bundle's order: the grantable
        ones asked for, and those granted unasked; unknown names are silently left out."""
        facts = self.facts
        return [
            name for name in facts.grantable if name in requested or name in facts.granted_unasked
        ]


def _declared(bindings: Bindings, models: tuple[str, ...], field: str) -> bool | None:
    """Whether the first of ``models`` (one type's names: the vocabulary's, then Muse's) that
    the bundle declares has ``field`` required; None when none of them has it."""
    for model in models:
        fields = bindings.fields(model)
        if field in fields:
            return fields[field]
    return None


def load_profile(version: HostVersion) -> HostProfile:
    """The profile of ``version``; raises ``KeyError`` for a version without a bundle."""
    surface = PLAYED_ON_OLDER.get(version.version, version.version)
    bindings = bindings_for(surface)
    if bindings.version != surface:
        raise KeyError(version.version)
    facts = facts_for(version.version)
    own_bindings = bindings_for(version.version)
    own = own_bindings.host_requests
    # A method the version's own bundle does not declare is no fact of it: KeyError.
    added = {method: own[method] for method in facts.served}
    added |= {method: False for method in facts.experimental}
    return HostProfile(
        version=version,
        fingerprint=facts.fingerprint or bindings.fingerprint,
        host_requests=MappingProxyType(
            {m: c for m, c in bindings.host_requests.items() if m not in facts.withdrawn} | added
        ),
        client_notifications=(bindings.client_notifications - facts.withdrawn) | facts.added,
        output_refs=bindings.serves("item/readOutput"),
        session_names=bindings.serves("session/rename"),
        titles="title" in bindings.fields("Session"),
        pending_kind_required=bool(
            _declared(bindings, ("PendingRequest", "PendingRequestPointer"), "kind")
        ),
        skill_input="skill" in bindings.outline.variants.get("TURN_INPUT_PART_VARIANTS", ()),
        change_reasons="reason" in bindings.fields("ApprovalChange"),
        cache_totals="cache_read_tokens" in bindings.fields("CumulativeTokenUsage"),
        session_cost="cost" in bindings.fields("CumulativeTokenUsage"),
        effort_tiers=_declared(
            bindings, ("ModelInfo", "ModelCatalogEntry"), "reasoning_effort_variants"
        )
        is not None,
        surface=bindings,
        workspace_roots="workspace_roots" in bindings.fields("SessionStartParams"),
        session_kinds="kind" in own_bindings.fields("Session"),
        facts=facts,
    )
