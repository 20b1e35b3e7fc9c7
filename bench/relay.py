"""Figure: what relaying a streamed turn through ``muse-acp serve`` costs.

Contract: ``measure`` plays a turn of ``deltas`` agent-message text deltas (``muse-sim``'s
``sim:stream N``) three ways, each in ``rounds`` rounds taken in turn: through ``muse-acp serve``
to a bare ACP client (prompt sent to prompt answered, every delta having arrived as its own
``agent_message_chunk``); straight from a ``muse-sim serve`` host to a bare MSP client
(``turn/start`` sent to ``turn/completed`` received); and the same MSP turn with the host's
output passed through a process that only copies bytes (``cat``), which is what this machine
charges for one more process between host and client however little it does. All three clients
are the same ``peer``, which only counts what arrives. Each path gets a warm-up turn first, so
the adapter's host is already running and no side pays for start-up. The figure is the median
seconds per turn of each path, the median over rounds of one round's relayed / direct and
copied / direct (the turns of a round run back to back, so a change in the machine's load
between rounds does not tip a ratio), and the adapter process's CPU time per relayed delta
(which, unlike the times, hardly moves when other work shares the machine).
"""

from __future__ import annotations

import shlex
import shutil
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import anyio

from bench.peer import Peer, cpu_seconds, spawn_peer
from bench.report import Figure, Measurement, Ratio
from bench.world import World, adapter_command
from muse_acp import __version__
from muse_acp.ids import new_uuid7
from muse_acp.rpc import JsonObject

__all__ = ["COPIED", "DIRECT", "RELAYED", "measure"]

RELAYED: Final = "through muse-acp serve"
DIRECT: Final = "straight from muse-sim (MSP)"
COPIED: Final = "from muse-sim through a byte copier"
_COPY: Final = (
    "import os\n"
    "while data := os.read(0, 1 << 17):\n"
    "    view = memoryview(data)\n"
    "    while view:\n"
    "        view = view[os.write(1, view):]\n"
)
TURN_TIMEOUT: Final = 120.0
CHUNKS: Final = "session/update:agent_message_chunk"


@asynccontextmanager
async def _acp_client(world: World) -> AsyncIterator[tuple[Peer, str]]:
    stderr = world.root / "relay-adapter.stderr"
    async with spawn_peer(
        adapter_command(), env=world.env(), cwd=world.workspace, stderr=stderr
    ) as peer:
        await peer.request(
            "initialize", {"protocolVersion": 1, "clientCapabilities": {}}, wait=TURN_TIMEOUT
        )
        session_id = await peer.new_session(str(world.workspace), wait=TURN_TIMEOUT)
        await _relayed_turn(peer, session_id, "warm up")
        yield peer, session_id


async def _relayed_turn(peer: Peer, session_id: str, text: str) -> tuple[float, float]:
    """Seconds the turn took, and CPU seconds the adapter spent on it."""
    params: JsonObject = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    cpu = cpu_seconds(peer.pid)
    started = time.perf_counter()
    answer = await peer.request("session/prompt", params, wait=TURN_TIMEOUT)
    elapsed = time.perf_counter() - started
    if not isinstance(answer, dict) or answer.get("stopReason") != "end_turn":
        raise RuntimeError(f"the relayed turn ended with {answer!r}")
    return elapsed, cpu_seconds(peer.pid) - cpu


def _copied_host(world: World) -> list[str]:
    """``muse-sim serve`` with its output piped through a byte copier (``cat``, or a loop of
    ``os.read``/``os.write`` where there is none)."""
    cat = shutil.which("cat")
    copier = [cat] if cat else [sys.executable, "-c", _COPY]
    launcher = world.root / "muse-through-copier"
    host = shlex.join([str(world.muse_bin), "serve"])
    launcher.write_text(f"#!/bin/sh\n{host} | {shlex.join(copier)}\n")
    launcher.chmod(0o755)
    return [str(launcher)]


@asynccontextmanager
async def _msp_client(
    world: World, argv: list[str] | None = None
) -> AsyncIterator[tuple[Peer, str]]:
    argv = argv or [str(world.muse_bin), "serve"]
    stderr = world.root / f"relay-{Path(argv[0]).name}.stderr"
    async with spawn_peer(argv, env=world.env(), cwd=world.workspace, stderr=stderr) as peer:
        client_info = {"name": "muse_acp_bench", "version": __version__}
        await peer.request("initialize", {"clientInfo": client_info}, wait=TURN_TIMEOUT)
        await peer.notify("initialized")
        started = await peer.request(
            "session/start",
            {"commandId": new_uuid7(), "workspaceRoot": str(world.workspace)},
            wait=TURN_TIMEOUT,
        )
        assert isinstance(started, dict)
        session = started["session"]
        assert isinstance(session, dict)
        session_id = session["sessionId"]
        assert isinstance(session_id, str)
        await _direct_turn(peer, session_id, "warm up")
        yield peer, session_id


async def _direct_turn(peer: Peer, session_id: str, text: str) -> float:
    completed = peer.arrival("turn/completed")
    params: JsonObject = {
        "commandId": new_uuid7(),
        "sessionId": session_id,
        "input": [{"type": "text", "text": text}],
    }
    started = time.perf_counter()
    await peer.request("turn/start", params, wait=TURN_TIMEOUT)
    with anyio.fail_after(TURN_TIMEOUT):
        await completed.wait()
    return time.perf_counter() - started


async def measure(world: World, *, deltas: int = 20_000, rounds: int = 7) -> Figure:
    """Median seconds per turn of ``deltas`` deltas, relayed and direct."""
    text = f"sim:stream {deltas}"
    relayed: list[float] = []
    direct: list[float] = []
    copied: list[float] = []
    adapter_cpu: list[float] = []
    async with (
        _acp_client(world) as (acp_peer, acp_session),
        _msp_client(world) as (msp_peer, msp_session),
        _msp_client(world, _copied_host(world)) as (copy_peer, copy_session),
    ):
        for _ in range(rounds):
            chunks = acp_peer.counts[CHUNKS]
            seconds, cpu = await _relayed_turn(acp_peer, acp_session, text)
            relayed.append(seconds)
            adapter_cpu.append(cpu)
            if acp_peer.counts[CHUNKS] - chunks != deltas:
                got = acp_peer.counts[CHUNKS] - chunks
                raise RuntimeError(f"the adapter relayed {got} of {deltas} deltas")
            for peer, session, times in (
                (msp_peer, msp_session, direct),
                (copy_peer, copy_session, copied),
            ):
                sent = peer.counts["item/delta"]
                times.append(await _direct_turn(peer, session, text))
                if peer.counts["item/delta"] - sent < deltas:
                    raise RuntimeError("the host sent fewer deltas than the turn asked for")
    relayed_s, direct_s = statistics.median(relayed), statistics.median(direct)
    ratio = statistics.median(r / d for r, d in zip(relayed, direct, strict=True))
    floor = statistics.median(c / d for c, d in zip(copied, direct, strict=True))
    return Figure(
        key="relay",
        title="relay overhead",
        measurements=(
            Measurement(RELAYED, relayed_s, "s/turn"),
            Measurement(DIRECT, direct_s, "s/turn"),
            Measurement(COPIED, statistics.median(copied), "s/turn"),
            Measurement("relayed deltas per second", deltas / relayed_s, "deltas/s"),
            Measurement(
                "adapter CPU per relayed delta",
                statistics.median(adapter_cpu) / deltas * 1e6,
                "us",
            ),
        ),
        ratios=(
            Ratio("relayed / direct", ratio, higher_is_better=False),
            Ratio("copied / direct", floor, higher_is_better=False),
        ),
        note=f"one turn of {deltas} agent-message deltas (sim:stream), median of {rounds} rounds",
    )
