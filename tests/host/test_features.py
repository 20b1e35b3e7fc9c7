"""What each Muse offers is decided by ``features_of`` alone: the table for every version the
simulator plays (and the unverified ones around them), with and without trust in newer hosts,
a running host's features decided at its handshake, and no other module asking the gate."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from muse_acp.host.client import open_host
from muse_acp.host.features import NO_FEATURES, features_of
from muse_acp.host.versions import Feature
from tests.agent_wire.harness import WAIT, make_world
from tests.agent_wire.test_host_versions import VERSIONS

RUNTIME: Final = Path(__file__).resolve().parents[2] / "runtime"
DECIDER: Final = "muse_acp.host.features"
"""The one module that may ask the version gate."""
GATE: Final = "supports"

EVERY: Final[frozenset[Feature]] = frozenset(
    {
        "storedOutput",
        "mcpOverlay",
        "nativeApprovalPolicy",
        "planSkill",
        "goals",
        "taskControl",
        "planUsage",
    }
)
# What each version offers as verified; with trust in newer hosts a version also gets every
# feature whose verified hosts are all older than it.
VERIFIED: Final[dict[str, frozenset[Feature]]] = {
    "1.1.1": frozenset({"nativeApprovalPolicy", "mcpOverlay"}),
    "1.2.1": frozenset({"nativeApprovalPolicy", "mcpOverlay", "storedOutput"}),
    "1.3.0": frozenset({"nativeApprovalPolicy", "goals", "taskControl", "planUsage"}),
    "1.4.2": frozenset({"nativeApprovalPolicy", "goals", "taskControl", "planUsage", "planSkill"}),
}
TRUSTED: Final[dict[str, frozenset[Feature]]] = {
    "1.1.1": VERIFIED["1.1.1"],
    "1.2.1": VERIFIED["1.2.1"],
    "1.3.0": VERIFIED["1.3.0"] | {"storedOutput", "mcpOverlay"},
    "1.4.2": EVERY,
}
TABLE: Final = [
    *((version, False, VERIFIED[version]) for version in VERSIONS),
    *((version, True, TRUSTED[version]) for version in VERSIONS),
    # Newer than every verified host: nothing unless trusted, then everything.
    ("1.9.0", False, frozenset()),
    ("1.9.0", True, EVERY),
    # Older, in between, or not known: only what it is newer than every verified host of.
    ("1.0.0", True, frozenset()),
    ("1.2.0", True, frozenset()),
    ("1.3.1", False, frozenset()),
    ("1.3.1", True, frozenset({"storedOutput", "mcpOverlay"})),
    (None, True, frozenset()),
]


@pytest.mark.parametrize(("version", "trust_newer", "offered"), TABLE)
def test_each_version_offers_exactly_its_features(
    version: str | None, trust_newer: bool, offered: frozenset[Feature]
) -> None:
    features = features_of(version, trust_newer=trust_newer)
    assert features.version == version
    assert features.offered == offered
    assert {feature for feature in EVERY if features.has(feature)} == offered


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
