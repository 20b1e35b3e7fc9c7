"""A muse-acp stopped by signals leaves nothing of its sessions on disk: a second signal while
it stops still lets the stop remove the settings overlays (MCP secrets), and after a SIGKILL
mid exec run the next start stops that run's process group and removes its staged images,
without a request waiting on that sweep.

Signals and a SIGKILL need a ``muse-acp serve`` process; the start after them, and what it
sweeps, runs in this process."""

from __future__ import annotations

import json
import os
import select
import signal
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.robust.rawagent import WAIT, raw_agent

from .harness import make_world
from .test_exec_backend import PNG, exec_runs
from .test_mcp_servers import SECRET, _ended_pid, _removed, _world

pytestmark = pytest.mark.anyio

MCP_SERVERS: list[dict[str, Any]] = [
    {
        "name": "files",
        "command": sys.executable,
        "args": ["-V"],
        "env": [{"name": "TOKEN", "value": SECRET}],
    },
    {
        "type": "http",
        "name": "web",
        "url": "https://mcp.example/x",
        "headers": [{"name": "Authorization", "value": f"Bearer {SECRET}"}],
    },
]
"""A stdio and an http server: 1.1.1 and 1.2.1 get both through a settings overlay."""


@pytest.mark.parametrize(
    ("version", "first", "second"),
    [
        # How the stop removes the overlay does not depend on the version (both of these get
        # one): each version once, with the same signal twice and with two different ones.
        ("1.1.1", signal.SIGTERM, signal.SIGTERM),
        ("1.2.1", signal.SIGINT, signal.SIGHUP),
    ],
)
async def test_a_second_signal_while_stopping_still_removes_the_overlay(
    tmp_path: Path, version: str, first: signal.Signals, second: signal.Signals
) -> None:
    world = _world(tmp_path, version)
    # A host that takes a second to exit once its input ends, so the stop always outlasts the
    # 20 ms before the second signal (muse-sim itself exits at once).
    world.muse_bin.write_text(
        f'#!/bin/sh\n"{sys.executable}" -m muse_acp.sim "$@"\nstatus=$?\n'
        '[ "$1" = serve ] && sleep 1\nexit $status\n'
    )
    overlays = world.data_dir / "run" / "settings-overlays"
    async with raw_agent(world, process=True) as agent:
        await agent.initialize()
        params = {"cwd": str(world.workspace), "mcpServers": MCP_SERVERS}
        session = (await agent.result("session/new", params))["sessionId"]
        answer = await agent.prompt_text(session, "hello")
        assert answer.get("result") == {"stopReason": "end_turn"}, answer
        assert len(list(overlays.iterdir())) == 1, "the session's host runs with its overlay"
        agent.spawned.send_signal(first)
        await anyio.sleep(0.02)  # the scenario: a second signal 20 ms into the stop
        agent.spawned.send_signal(second)
        with anyio.fail_after(WAIT):
            await agent.process.wait()
        # Its exit status is not asked for: a second signal that comes once the stop is done
        # may end the process by its default action, with nothing left to remove.
        assert list(overlays.iterdir()) == [], "the overlay outlived the agent"
        assert "received" in world.stderr_text(), "the first signal started the stop"


def _wait_ended(pid: int) -> bool:
    """Whether process ``pid`` ended (or was gone already) within ``WAIT`` seconds."""
    try:
        descriptor = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([descriptor], [], [], WAIT)
        return bool(readable)
    finally:
        os.close(descriptor)


async def test_after_a_sigkill_mid_exec_run_the_next_start_stops_it_and_removes_its_images(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path, version="0.2.1")  # exec only
    prompt = [
        {"type": "text", "text": "sim:stream 1\nsim:hold"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
    ]
    async with raw_agent(world, process=True) as agent:
        await agent.initialize()
        session = await agent.new_session()
        await agent.start_request("session/prompt", {"sessionId": session, "prompt": prompt})
        await agent.wait_until(
            lambda: any(n.get("method") == "session/update" for n in agent.notifications),
            "the run's first update",
        )
        agent.process.kill()
        with anyio.fail_after(WAIT):
            await agent.process.wait()
    [run] = exec_runs(world)
    try:
        folder = Path(run["images"][0]["path"]).parent
        assert folder.is_dir(), "the killed agent could not remove the images"
        assert json.loads((folder / "process.json").read_text())["pid"] == run["pid"]
        os.kill(run["pid"], 0)  # the run goes on without its agent
        async with raw_agent(world) as agent:
            await agent.initialize()
            await agent.new_session()  # loads the agent, which sweeps in the background
            await _removed(folder)
            assert await anyio.to_thread.run_sync(_wait_ended, run["pid"]), "the run goes on"
    finally:
        with suppress(ProcessLookupError):
            os.killpg(run["pid"], signal.SIGKILL)  # never leave the run behind, pass or fail


@pytest.mark.parametrize(
    "version", ["0.2.1", "1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13"]
)
async def test_what_an_ended_agent_left_is_swept_without_stalling_the_next_start(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    ended = _ended_pid()
    run = world.data_dir / "run" / "exec-runs" / f"{ended}-0123abcd"
    run.mkdir(parents=True)
    # A record no muse-acp wrote: a blocking read of it would wait for a writer forever.
    os.mkfifo(run / "process.json")
    overlay = world.data_dir / "run" / "settings-overlays" / f"{ended}-4567cdef" / "muse"
    overlay.mkdir(parents=True)
    (overlay / "settings.json").write_text(json.dumps({"secret": SECRET}))
    async with raw_agent(world) as agent:
        await agent.initialize()
        with anyio.fail_after(WAIT):
            session = await agent.new_session()
            answer = await agent.prompt_text(session, "hello")
        assert answer.get("result") == {"stopReason": "end_turn"}, answer
        await _removed(run)
        await _removed(overlay.parent)
