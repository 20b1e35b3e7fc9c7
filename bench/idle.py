"""Figure: what an agent left open costs when nobody uses it.

Contract: ``measure`` starts one ``muse-acp serve`` and opens ``sessions`` sessions with
``session/new``; after ``settle`` seconds (what their answers set going has finished) it reads
the adapter's CPU time and wake-ups over ``window`` seconds in which nothing is asked of it: the
sessions are open and no host runs for them. It then prompts each session once (a one-line
turn, so each has its own ``muse-sim`` host running, as an editor's open threads do) and, after
``settle`` seconds again, reads the same over another ``window``. The adapter's hosts are kept
for longer than the measurement (``MUSE_ACP_IDLE_TIMEOUT``), so none closes inside a window.

CPU time is the process's (``/proc``, all threads, in clock ticks of usually 10 ms); wake-ups
are the context switches of its threads (voluntary and not: each time one of them slept and ran
again). The figure gives both per window and, as the ratio, the share of one core the adapter
used at most: (CPU time + one clock tick) / window, the tick because a reading of zero ticks
means less than one. A timer per session that fired every few seconds would show as wake-ups
growing with the window and the sessions; the hosts' own CPU is not counted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio

from bench.peer import Peer, cpu_seconds, spawn_peer
from bench.report import Figure, Measurement, Ratio
from bench.world import World, adapter_command
from muse_acp.rpc import JsonObject

__all__ = ["measure"]

TURN_TIMEOUT: Final = 120.0
TICK: Final = 1 / os.sysconf("SC_CLK_TCK")


def wake_ups(pid: int) -> int:
    """Context switches so far of every thread of a running process (Linux ``/proc``)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
        except OSError:
            continue  # a worker thread that ended meanwhile
        for line in status.splitlines():
            if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")):
                total += int(line.split()[1])
    return total


@dataclass(frozen=True, slots=True)
class _Window:
    cpu: float
    """CPU seconds the adapter used in the window."""
    wake_ups: int


async def _quiet(peer: Peer, settle: float, window: float) -> _Window:
    """The adapter's CPU and wake-ups over ``window`` seconds after ``settle`` seconds."""
    await anyio.sleep(settle)
    cpu, woken = cpu_seconds(peer.pid), wake_ups(peer.pid)
    await anyio.sleep(window)
    return _Window(cpu_seconds(peer.pid) - cpu, wake_ups(peer.pid) - woken)


async def _prompt(peer: Peer, session_id: str) -> None:
    params: JsonObject = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]}
    answer = await peer.request("session/prompt", params, wait=TURN_TIMEOUT)
    if not isinstance(answer, dict) or answer.get("stopReason") != "end_turn":
        raise RuntimeError(f"a turn ended with {answer!r}")


async def measure(
    world: World, *, sessions: int = 16, window: float = 60.0, settle: float = 5.0
) -> Figure:
    """The adapter's CPU and wake-ups over ``window`` seconds with ``sessions`` idle sessions,
    without hosts and then with a host each."""
    env = world.env()
    env["MUSE_ACP_IDLE_TIMEOUT"] = str(round(2 * (settle + window) + 60))
    stderr = world.root / "idle-adapter.stderr"
    async with spawn_peer(adapter_command(), env=env, cwd=world.workspace, stderr=stderr) as peer:
        init: JsonObject = {"protocolVersion": 1, "clientCapabilities": {}}
        await peer.request("initialize", init, wait=TURN_TIMEOUT)
        session_ids = []
        for _ in range(sessions):
            params: JsonObject = {"cwd": str(world.workspace), "mcpServers": []}
            created = await peer.request("session/new", params, wait=TURN_TIMEOUT)
            session_ids.append(str(created["sessionId"]))
        unhosted = await _quiet(peer, settle, window)
        async with anyio.create_task_group() as warm_ups:
            for session_id in session_ids:
                warm_ups.start_soon(_prompt, peer, session_id)
        hosted = await _quiet(peer, settle, window)
    measurements: list[Measurement] = []
    ratios: list[Ratio] = []
    for label, quiet in (("no host running", unhosted), (f"{sessions} hosts running", hosted)):
        measurements += [
            Measurement(f"{label}: adapter CPU in {window:g} s", quiet.cpu * 1e3, "ms"),
            Measurement(f"{label}: adapter wake-ups in {window:g} s", quiet.wake_ups, "wake-ups"),
        ]
        share = (quiet.cpu + TICK) / window
        ratios.append(Ratio(f"{label}: share of one core, at most", share, False))
    return Figure(
        key="idle",
        title=f"{sessions} idle sessions",
        measurements=tuple(measurements),
        ratios=tuple(ratios),
        note=(
            f"one muse-acp serve with {sessions} open sessions nobody uses, {window:g} s after "
            f"{settle:g} s of settling; CPU from /proc in ticks of {TICK * 1e3:g} ms"
        ),
    )
