"""Every trace in ``tests/fixtures/traces`` replays through the check with no difference: a
recorded session (a user's, the suite's own, or one made from an official MSP transcript or a
captured host's traffic, ``tests.traces.convert``) kept as a regression test of muse-acp's
output. A deliberate change of that output is followed by re-recording them (``scenario_traced``,
``tests.traces.convert``; the folder's README says how)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from muse_acp.config import load_config
from muse_acp.sim.in_process import SimLauncher
from muse_acp.traces.check import check_trace
from muse_acp.traces.replay import read_trace

from .harness import make_world

pytestmark = pytest.mark.anyio

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
TRACES = sorted(FOLDER.glob("*.jsonl"))


def test_the_folder_holds_traces() -> None:
    assert TRACES, f"no trace in {FOLDER}"


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
async def test_a_kept_trace_replays_with_no_difference(tmp_path: Path, path: Path) -> None:
    trace = await anyio.to_thread.run_sync(read_trace, path)
    backend = trace.decision("backend")
    assert isinstance(backend, dict)
    world = make_world(tmp_path, version=str(backend["version"]))
    env = world.env(dict(os.environ))
    outcome = await check_trace(
        trace, load_config(env), env, SimLauncher(), cwd=str(world.workspace)
    )
    assert outcome.first is None, outcome.first.describe()
    assert outcome.host_departures == []
