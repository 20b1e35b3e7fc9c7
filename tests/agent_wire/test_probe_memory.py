"""What a start remembers of the Muse executable is written only when it changed: a start that
finds its probe remembered (``initialize`` answered by the connection, or before the event loop)
leaves the file as it was, and an updated Muse is remembered again, on every host version."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from muse_acp.agent.handshake import startup
from muse_acp.agent.handshake.early import answer_first
from muse_acp.agent.handshake.startup import Startup
from muse_acp.config import load_config
from muse_acp.host import binary
from muse_acp.host.binary import MuseBinary
from muse_acp.host.executable_memory import memory_dir, recall, remember_probe
from muse_acp.sim.in_process import SimLauncher

from .harness import WAIT, World, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}


def _probe_file(world: World) -> Path:
    (found,) = memory_dir(world.data_dir).glob("*.probe.json")
    return found


def _stamp(path: Path) -> tuple[int, int]:
    """The file's inode and modification time: any write (a replacement) changes them."""
    stat = path.stat()
    return stat.st_ino, stat.st_mtime_ns


class ProbeWrites:
    """Counts the calls of ``remember_probe`` that ``Startup`` made and that have returned (in
    their worker thread), so a test can wait for a start's own: a request only waits for the
    probe to settle, and the memory is written after, beside the requests."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.done = 0
        self._changed = anyio.Event()

        def counted(folder: Path, probed: MuseBinary) -> None:
            try:
                remember_probe(folder, probed)
            finally:
                anyio.from_thread.run_sync(self._note)

        monkeypatch.setattr(startup, "remember_probe", counted)

    def _note(self) -> None:
        self.done += 1
        self._changed.set()
        self._changed = anyio.Event()

    async def reach(self, count: int) -> None:
        with anyio.fail_after(WAIT):
            while self.done < count:
                await self._changed.wait()


async def _start(world: World, writes: ProbeWrites) -> None:
    """A start of muse-acp as a new process: initialize, then a request, which waits until the
    probe has settled; then until the start's call to remember it has returned."""
    binary._cache.clear()  # as a new process would start
    before = writes.done
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.list_sessions(cwd=str(world.workspace))
        await writes.reach(before + 1)


async def _start_answered_early(world: World) -> None:
    """A start whose ``initialize`` came first and was answered before the event loop (what
    ``muse-acp serve`` does), then settled as the connection settles it."""
    binary._cache.clear()
    env = world.env()
    config = load_config(env)
    agent_in, client_out = os.pipe()
    client_in, agent_out = os.pipe()
    try:
        os.write(client_out, json.dumps(INITIALIZE).encode() + b"\n")
        opening = answer_first(config, agent_in, agent_out)
        assert opening is not None
        assert opening.answered is not None
        assert json.loads(os.read(client_in, 1 << 20))["id"] == 0
        startup = Startup(config, env, SimLauncher())
        startup.adopt(opening.answered.params, opening.answered.negotiated)
        with anyio.fail_after(WAIT):
            await startup.settle()
        assert startup.probed is not None
    finally:
        for fd in (agent_in, client_out, client_in, agent_out):
            os.close(fd)


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_start_that_finds_its_probe_remembered_writes_nothing_and_an_update_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    writes = ProbeWrites(monkeypatch)
    world = make_world(tmp_path, version)
    await _start(world, writes)
    probe_file = _probe_file(world)
    first = _stamp(probe_file)
    remembered = recall(memory_dir(world.data_dir), str(world.muse_bin)).probe
    assert remembered is not None
    assert remembered.version == version

    world.first_start = True  # from here on only the agent's own starts touch the memory
    await _start(world, writes)
    assert _stamp(probe_file) == first
    await _start_answered_early(world)
    assert _stamp(probe_file) == first

    # An updated Muse at the same path: another version, and the file changed.
    updated = VERSIONS[(VERSIONS.index(version) + 1) % len(VERSIONS)]
    world.version = updated
    stat = world.muse_bin.stat()
    os.utime(world.muse_bin, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    await _start(world, writes)
    assert _stamp(probe_file) != first
    after_update = recall(memory_dir(world.data_dir), str(world.muse_bin)).probe
    assert after_update is not None
    assert after_update.version == updated
    # And the start after that finds it remembered, answered early or not.
    second = _stamp(probe_file)
    await _start_answered_early(world)
    await _start(world, writes)
    assert _stamp(probe_file) == second
