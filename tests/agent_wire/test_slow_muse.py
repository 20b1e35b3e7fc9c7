"""``initialize`` never waits on the Muse executable: against a Muse whose ``--version`` does not
answer (a launcher that checks for updates first), the answer comes from what is known of it,
and the version-dependent rest is settled before the first session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from muse_acp.host import binary
from muse_acp.sim.launcher import write_launcher

from .harness import WAIT, Agent, World, make_world, running_agent

pytestmark = pytest.mark.anyio

OPTED_IN = schema.ClientCapabilities(field_meta={"muse/output": 1})

# `--version` waits until the test releases it (bounded, so a failing test leaves no process).
HOLD = """case "$1" in
  --version)
    : > '{started}'
    i=0
    while [ ! -e '{release}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done;;
esac"""


def _slow_world(tmp_path: Path) -> tuple[World, Path]:
    world = make_world(tmp_path, version="1.2.1")
    release = tmp_path / "release"
    prelude = HOLD.format(started=tmp_path / "started", release=release)
    write_launcher(world.muse_bin, prelude=prelude)
    world.first_start = True
    return world, release


def _initialize_result(agent: Agent) -> dict[str, Any]:
    answer = next(m for d, m in agent.frames if d == "in" and m.get("id") == 0)
    result: dict[str, Any] = answer["result"]
    return result


async def test_initialize_answers_while_the_version_probe_hangs(tmp_path: Path) -> None:
    world, release = _slow_world(tmp_path)
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        # Answered though `--version` cannot have finished: the test has not released it.
        assert not release.exists()
        first = _initialize_result(agent)
        release.touch()
        with anyio.fail_after(WAIT):
            session = await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=[])
    # Nothing was known of this Muse yet: no version-dependent extension was offered, and the
    # session waited for the probe (the safety options need the executable's flags).
    assert "muse/output" not in (first.get("_meta") or {})
    options = [getattr(o, "root", o).id for o in session.config_options or []]
    assert "shell" in options

    # The next start remembers the probe: the same hang, and 1.2.1's stored output is offered.
    release.unlink()
    binary._cache.clear()  # as a new process would start
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        assert not release.exists()
        second = _initialize_result(agent)
        release.touch()
    assert second["_meta"]["muse/output"]["method"] == "_muse/readOutput"
