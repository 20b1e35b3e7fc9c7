"""Muse 1.4.4 and 1.4.13 as muse-sim plays them: each its own version, build and official
schema fingerprint (the one ingested with its bundle) on the 1.4.2 surface, without
``session/delete``; a fork cut after an earlier turn refused with ``forkBoundaryInvalid`` as a
real 1.4.4 host refuses it (a cut after the last turn still works), and allowed on 1.4.13.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .captures import REPO_ROOT
from .harness import SimPeer, sim_served
from .runs import sim_hosted

pytestmark = pytest.mark.anyio

OFFICIAL_1_4_4_FINGERPRINT = (
    "sha256:7c94f153c41659cb3f1bd3c3e04438be254644cb2a97d65d48edc7449b74858a"
)
"""The stable-surface fingerprint Muse publishes for 1.4.4."""
SPEC = REPO_ROOT / "spec" / "msp"


@pytest.mark.parametrize(("version", "build"), [("1.4.4", "R5419.1"), ("1.4.13", "R0.1")])
async def test_a_newer_release_reports_its_version_build_and_official_fingerprint(
    tmp_path: Path, version: str, build: str
) -> None:
    manifest = json.loads((SPEC / version / "manifest.json").read_text(encoding="utf-8"))
    assert not manifest["experimental"]
    if version == "1.4.4":
        assert manifest["fingerprint"] == OFFICIAL_1_4_4_FINGERPRINT
    async with sim_hosted(tmp_path, version=version) as sim:
        result = await sim.initialize()
    assert result["serverInfo"] == {"name": "muse", "version": version}
    assert result["userAgent"].startswith(f"muse-sim/{version}-{build} ")
    assert result["schema"] == {"version": 1, "fingerprint": manifest["fingerprint"]}


async def _fork_at(sim: SimPeer, source: str, turn_id: str) -> dict[str, object]:
    response, _ = await sim.request(
        "session/fork",
        {"commandId": new_uuid7(), "sessionId": source, "cutPoint": {"lastTurnId": turn_id}},
    )
    return response


@pytest.mark.parametrize(
    ("version", "earlier_refused"), [("1.4.2", False), ("1.4.4", True), ("1.4.13", False)]
)
async def test_a_fork_cut_after_an_earlier_turn_is_refused_on_1_4_4_not_1_4_13(
    tmp_path: Path, version: str, earlier_refused: bool
) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        source = await sim.start()
        first = await sim.turn(source, "first", reasoningEffort="none")
        last = await sim.turn(source, "second", reasoningEffort="none")
        earlier = await _fork_at(sim, source, first[-1]["params"]["turnId"])
        latest = await _fork_at(sim, source, last[-1]["params"]["turnId"])
    assert "result" in latest, latest
    if earlier_refused:
        error = earlier["error"]
        assert isinstance(error, dict)
        assert error["code"] == -32023
        assert error["data"]["kind"] == "forkBoundaryInvalid"
    else:
        assert "result" in earlier, earlier
