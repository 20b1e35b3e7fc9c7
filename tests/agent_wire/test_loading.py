"""How the agent and its hosts load (``muse_acp.loading``): without scanning for pydantic
plugins, without touching the environment hosts inherit, and with the collector back on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Final

import anyio
import pytest

from muse_acp.sim.launcher import write_launcher
from muse_acp.sim.options.versions import HOST_VERSIONS
from tests.agent_wire.harness import WAIT, World, make_world, running_agent

pytestmark = pytest.mark.anyio

PLUGIN_MODULE: Final = """\
import os

with open(os.environ["PLUGIN_MARKER"], "a", encoding="utf-8") as marker:
    marker.write(f"{os.getpid()}\\n")


class _Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = _Plugin()
"""
"""A pydantic plugin that records every process that loads it."""

ENTRY_POINTS: Final = "[pydantic]\nmarker = marker_plugin:plugin\n"


def _world_with_a_plugin(root: Path, version: str) -> tuple[World, Path]:
    """A world whose processes see an installed pydantic plugin, and whose ``muse`` writes the
    environment of every process it starts next to the world; returns the plugin's marker."""
    site = root / "site"
    dist_info = site / "marker_plugin-1.0.dist-info"
    dist_info.mkdir(parents=True)
    (site / "marker_plugin.py").write_text(PLUGIN_MODULE, encoding="utf-8")
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: marker-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    (root / "world").mkdir()
    world = make_world(root / "world", version)
    write_launcher(world.muse_bin, prelude=f'env > "{world.root}/host-env.$$"')
    marker = root / "plugin-loaded"
    paths = [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]
    world.extra_env.update(PYTHONPATH=os.pathsep.join(paths), PLUGIN_MARKER=str(marker))
    return world, marker


@pytest.mark.parametrize("version", tuple(HOST_VERSIONS))
async def test_neither_the_agent_nor_its_hosts_load_pydantic_plugins_nor_pass_on_a_switch(
    tmp_path: Path, version: str
) -> None:
    world, marker = _world_with_a_plugin(tmp_path, version)
    # The plugin is really installed: a plain program that builds a model loads it.
    control = "import pydantic\nclass M(pydantic.BaseModel):\n    a: int\nM(a=1)\n"
    with anyio.fail_after(WAIT):
        await anyio.run_process([sys.executable, "-c", control], env=world.env())
    assert marker.exists(), "the control program did not load the plugin"
    marker.unlink()

    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "hello")
        assert response.stop_reason == "end_turn"

    assert not marker.exists(), f"loaded by processes {marker.read_text().split()}"
    environments = [path.read_text() for path in world.root.glob("host-env.*")]
    assert environments, "no Muse process was started"
    for environment in environments:
        assert "PLUGIN_MARKER=" in environment  # the agent's own environment, passed on
        assert not [line for line in environment.splitlines() if line.startswith("PYDANTIC_")]


async def test_an_agent_that_served_a_request_runs_with_its_collector_on(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}},
    ]
    # The agent runs as ``muse-acp serve`` does; at its exit it reports its collector's state.
    program = (
        "import atexit, gc, runpy, sys\n"
        "atexit.register(lambda: print('collector', gc.isenabled(), gc.get_freeze_count() > 0,"
        " file=sys.stderr))\n"
        "sys.argv = ['muse-acp', 'serve']\n"
        "runpy.run_module('muse_acp', run_name='__main__')\n"
    )
    with world.stderr.open("wb") as stderr, anyio.fail_after(WAIT):
        async with await anyio.open_process(
            [sys.executable, "-c", program], env=world.env(), cwd=world.root, stderr=stderr
        ) as agent:
            assert agent.stdin is not None
            assert agent.stdout is not None
            await agent.stdin.send("".join(json.dumps(f) + "\n" for f in frames).encode())
            received = b""
            while received.count(b"\n") < len(frames):
                received += await agent.stdout.receive()
            await agent.stdin.aclose()
            await agent.wait()
    answers = [json.loads(line) for line in received.splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2], world.stderr_text()[-3000:]
    assert "result" in answers[1], answers[1]
    # Paused while the agent loaded, then on again, with what loading made kept out of sight.
    assert world.stderr_text().splitlines()[-1] == "collector True True", world.stderr_text()
