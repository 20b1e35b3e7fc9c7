"""What each Muse offers is decided by ``features_of`` alone: the table for every version the
simulator plays (and the unverified ones around them), with and without trust in newer hosts,
a running host's features decided at its handshake, and no other module asking the gate."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final
from unittest.mock import patch

import pytest

from muse_acp.host import features
from muse_acp.host.bindings import bindings_for
from muse_acp.host.client import open_host
from muse_acp.host.features import NEEDS, NO_FEATURES, Needs, features_of
from muse_acp.host.versions import Feature
from muse_acp_wire.msp_bundles import FINGERPRINTS
from muse_acp_wire.msp_outlines import OUTLINES
from tests.agent_wire.harness import WAIT, make_world
from tests.agent_wire.test_host_versions import VERSIONS

RUNTIME: Final = Path(__file__).resolve().parents[2] / "runtime"
DECIDER: Final = "muse_acp.host.features"
"""The one module that may ask the version gate."""
GATE: Final = "supports"

DECLARED_FROM_1_1: Final[frozenset[Feature]] = frozenset(
    {"nativeApprovalPolicy", "mcpOverlay", "turnForkBoundary"}
)
# Muse's own 1.3.0 declarations already have subagent/stop.
FROM_1_3: Final[frozenset[Feature]] = frozenset(
    {
        "nativeApprovalPolicy",
        "goals",
        "taskControl",
        "workflowChildren",
        "planUsage",
        "turnForkBoundary",
        "subagentStop",
    }
)
FROM_1_4_4: Final[frozenset[Feature]] = frozenset(
    {"planSkill", "workspaceRoots", "questionEngaged", "subagentStop", "workflowPause"}
)
# What each version offers without trust in newer hosts: what its bundle declares, less what a
# known behaviour turns off (stored output and the settings overlay only where verified; the
# Plan skill from 1.4.0; Muse's own delete on 1.4.1-1.4.2; a chosen fork turn off on 1.4.3-4).
VERIFIED: Final[dict[str, frozenset[Feature]]] = {
    "1.1.1": DECLARED_FROM_1_1,
    "1.2.1": DECLARED_FROM_1_1 | {"storedOutput"},
    "1.3.0": FROM_1_3,
    "1.4.2": FROM_1_3 | {"planSkill", "sessionDelete", "workspaceRoots"},
    "1.4.4": FROM_1_3 - {"turnForkBoundary"} | FROM_1_4_4,
    "1.4.13": FROM_1_3 | FROM_1_4_4 | {"workflowResume"},
}
# Trust in newer hosts adds only the verified-only features to a host newer than all of theirs.
TRUSTED: Final[dict[str, frozenset[Feature]]] = {
    "1.1.1": VERIFIED["1.1.1"],
    "1.2.1": VERIFIED["1.2.1"],
    "1.3.0": VERIFIED["1.3.0"] | {"storedOutput", "mcpOverlay"},
    "1.4.2": VERIFIED["1.4.2"] | {"storedOutput", "mcpOverlay"},
    "1.4.4": VERIFIED["1.4.4"] | {"storedOutput", "mcpOverlay"},
    "1.4.13": VERIFIED["1.4.13"] | {"storedOutput", "mcpOverlay"},
}
NEWEST: Final = FROM_1_3 | FROM_1_4_4 | {"workflowResume"}
"""A host newer than every bundle: the newest bundle's declarations, no Muse delete."""
TABLE: Final = [
    *((version, False, VERIFIED[version]) for version in VERSIONS),
    *((version, True, TRUSTED[version]) for version in VERSIONS),
    ("1.9.0", False, NEWEST),
    ("1.9.0", True, NEWEST | {"storedOutput", "mcpOverlay"}),
    # Older than every bundle, or not known: nothing.
    ("1.0.3", True, frozenset()),
    (None, True, frozenset()),
    # In between: the nearest older bundle, less the known behaviours of the version.
    ("1.2.0", True, DECLARED_FROM_1_1 - {"mcpOverlay"}),
    ("1.3.1", False, FROM_1_3),
    ("1.3.1", True, FROM_1_3 | {"storedOutput", "mcpOverlay"}),
    ("1.4.0", False, FROM_1_3 | {"planSkill"}),
    ("1.4.1", False, FROM_1_3 | {"planSkill"}),
    # 1.4.3 is read with 1.4.2, 1.4.5 with 1.4.4 (no workflow/resume before 1.4.13's bundle).
    ("1.4.3", False, FROM_1_3 - {"turnForkBoundary"} | {"planSkill", "workspaceRoots"}),
    ("1.4.5", False, NEWEST - {"workflowResume"}),
]
BUNDLE_READ: Final = [
    ("1.1.1", "1.1.1"),
    ("1.2.0", "1.1.1"),
    ("1.3.0", "1.3.0"),
    ("1.4.3", "1.4.2"),
    ("1.4.4", "1.4.4"),
    ("1.4.5", "1.4.4"),
    ("1.4.10", "1.4.9"),
    ("1.4.12", "1.4.11"),
    ("1.4.13", "1.4.13"),
    ("7.0.0", "1.4.13"),
    ("1.0.3", None),
    (None, None),
]


@pytest.mark.parametrize(("version", "trust_newer", "offered"), TABLE)
def test_each_version_offers_exactly_its_features(
    version: str | None, trust_newer: bool, offered: frozenset[Feature]
) -> None:
    features = features_of(version, trust_newer=trust_newer)
    assert features.version == version
    assert features.offered == offered
    assert {feature for feature in NEEDS if features.has(feature)} == offered


@pytest.mark.parametrize(("version", "bundle"), BUNDLE_READ)
def test_a_host_is_read_with_its_bundle_else_the_nearest_older_one(
    version: str | None, bundle: str | None
) -> None:
    assert features_of(version, trust_newer=False).bundle == bundle


def test_a_reported_fingerprint_chooses_the_bundle_before_the_version() -> None:
    stable_1_4_9 = OUTLINES["1.4.9"].fingerprint
    # A 1.4.10 host (Muse did not change the schema) and a development build whose version
    # says nothing useful: both are read with the bundle of the schema they report.
    for version in ("1.4.10", "2.0.0-dev"):
        bindings = bindings_for(version, stable_1_4_9)
        assert (bindings.version, bindings.by_fingerprint, bindings.exact) == ("1.4.9", True, False)
        assert features_of(version, trust_newer=False, fingerprint=stable_1_4_9).bundle == "1.4.9"
    # The fingerprint a host reports to a client that opted in to experimental methods.
    experimental = next(
        f for f, v in FINGERPRINTS.items() if v == "1.4.4" and f != OUTLINES[v].fingerprint
    )
    assert bindings_for("1.4.4", experimental).version == "1.4.4"
    # A fingerprint no bundle has: the version decides, as before.
    unknown = "sha256:" + "0" * 64
    bindings = bindings_for("1.4.12", unknown)
    assert (bindings.version, bindings.by_fingerprint) == ("1.4.11", False)
    assert features_of("1.0.3", trust_newer=False, fingerprint=unknown).bundle is None


def test_a_feature_needing_a_capability_is_on_only_where_the_handshake_granted_it() -> None:
    needs = Needs(methods=frozenset({"usage/read"}), capabilities=frozenset({"feedback"}))
    bindings = bindings_for("1.4.2")
    assert needs.declared_by(bindings)
    with patch.object(features, "NEEDS", {**features.NEEDS, "planUsage": needs}):
        assert features_of("1.4.2", trust_newer=False, granted=frozenset({"feedback"})).has(
            "planUsage"
        )
        granted = frozenset({"userShell"})
        assert not features_of("1.4.2", trust_newer=False, granted=granted).has("planUsage")


def test_what_a_known_behaviour_turns_off_is_withdrawn_not_merely_absent() -> None:
    # Withdrawn: declared by the bundle, off on this host, so muse-acp refuses it up front.
    assert {"sessionDelete", "turnForkBoundary"} <= features_of("1.4.4", trust_newer=True).withdrawn
    assert "sessionDelete" not in features_of("1.3.0", trust_newer=True).withdrawn
    assert not features_of("1.4.2", trust_newer=True).withdrawn


def test_an_unknown_muse_offers_nothing() -> None:
    assert features_of(None, trust_newer=True) == NO_FEATURES


@pytest.mark.anyio
@pytest.mark.parametrize("trust_newer", [False, True])
@pytest.mark.parametrize("version", VERSIONS)
async def test_a_running_host_has_the_features_of_the_version_its_handshake_reported(
    tmp_path: Path, version: str, trust_newer: bool
) -> None:
    world = make_world(tmp_path, version=version)
    async with open_host(
        str(world.muse_bin),
        cwd=str(world.workspace),
        env=world.env(),
        startup_timeout=WAIT,
        trust_newer=trust_newer,
    ) as host:
        assert host.version == version
        assert host.features.offered == (TRUSTED if trust_newer else VERIFIED)[version]
        # Every simulated host reports its bundle's schema fingerprint, which chose the bundle.
        assert (host.bindings.version, host.bindings.by_fingerprint) == (version, True)
        assert host.features.bundle == version


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((RUNTIME / "muse_acp").rglob("*.py")):
        name = ".".join(path.relative_to(RUNTIME).with_suffix("").parts)
        yield name.removesuffix(".__init__"), ast.parse(path.read_text(encoding="utf-8"))


def _asks_the_gate(tree: ast.Module) -> bool:
    """``tree`` imports the gate, or calls or reads it by name or as a module's member."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == GATE for a in node.names):
            return True
        if isinstance(node, ast.Name) and node.id == GATE:
            return True
        if isinstance(node, ast.Attribute) and node.attr == GATE:
            return True
    return False


def test_only_the_deciding_module_asks_the_version_gate() -> None:
    asking = {name for name, tree in _modules() if _asks_the_gate(tree)}
    assert asking == {DECIDER}


def test_a_module_asking_the_gate_would_be_found() -> None:
    # The check itself must be able to fail, whichever way a module reaches the gate.
    for source in (
        "from muse_acp.host.versions import supports",
        "from muse_acp.host import versions\nversions.supports('goals', v)",
        "enabled = supports('goals', v, trust_newer=True)",
    ):
        assert _asks_the_gate(ast.parse(source))
    assert not _asks_the_gate(ast.parse("features.has('goals')"))
