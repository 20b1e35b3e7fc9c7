"""Figure: what a session trace (``MUSE_ACP_TRACE=redacted``) costs the relay of a turn.

Contract: ``measure`` runs two ``muse-acp serve`` processes side by side against the same
simulated Muse, one untraced and one tracing redacted (every ACP and MSP frame recorded, its text
hashed), and plays a turn of ``deltas`` agent-message deltas (``sim:stream N``) through each, in
``rounds`` rounds taken in turn (one turn each, back to back, so a change in the machine's load
between rounds does not tip the ratio). Each gets a warm-up turn first. The figure is the median
seconds per turn of each, the median over rounds of traced / untraced, the adapter's CPU time
per relayed delta of each (the traced one's with its trace writer process, up to each turn's
answer), and the size of the trace written, which must hold every frame
(``deltas`` is kept small enough that the turns stay under the trace's size cap). The trace is
redacted and written by a process of its own, so its cost shows in the CPU figure more than in
the time.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from bench.peer import Peer, cpu_seconds, spawn_peer
from bench.report import Figure, Measurement, Ratio
from bench.world import World, adapter_command
from muse_acp.rpc import JsonObject

__all__ = ["TRACED", "UNTRACED", "measure"]

TRACED: Final = "through muse-acp serve, traced (redacted)"
UNTRACED: Final = "through muse-acp serve, untraced"
TURN_TIMEOUT: Final = 120.0
CHUNKS: Final = "session/update:agent_message_chunk"


@asynccontextmanager
async def _client(world: World, traces: Path | None) -> AsyncIterator[tuple[Peer, str]]:
    env = world.env()
    if traces is not None:
        env.update(MUSE_ACP_TRACE="redacted", MUSE_ACP_TRACE_DIR=str(traces))
    name = "traced" if traces is not None else "untraced"
    stderr = world.root / f"relay-{name}.stderr"
    async with spawn_peer(adapter_command(), env=env, cwd=world.workspace, stderr=stderr) as peer:
        await peer.request(
            "initialize", {"protocolVersion": 1, "clientCapabilities": {}}, wait=TURN_TIMEOUT
        )
        session_id = await peer.new_session(str(world.workspace), wait=TURN_TIMEOUT)
        await _turn(peer, session_id, "warm up")
        yield peer, session_id


def _cpu(pid: int) -> float:
    """CPU seconds of the adapter and of its children that are not Muse hosts (the trace's
    writer process), so the trace's whole cost is counted."""
    total = cpu_seconds(pid)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return total
    for child in children:
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"muse_acp.traces.writer" in command:
                total += cpu_seconds(int(child))
        except OSError:
            continue
    return total


async def _turn(peer: Peer, session_id: str, text: str) -> tuple[float, float]:
    """Seconds the turn took, and CPU seconds the adapter (with its trace writer) spent on it
    up to the answer (the writer may finish the turn's frames after it)."""
    params: JsonObject = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    cpu = _cpu(peer.pid)
    started = time.perf_counter()
    answer = await peer.request("session/prompt", params, wait=TURN_TIMEOUT)
    elapsed = time.perf_counter() - started
    if not isinstance(answer, dict) or answer.get("stopReason") != "end_turn":
        raise RuntimeError(f"the relayed turn ended with {answer!r}")
    return elapsed, _cpu(peer.pid) - cpu


async def measure(world: World, *, deltas: int = 10_000, rounds: int = 7) -> Figure:
    """Median seconds per turn of ``deltas`` deltas, traced and untraced."""
    text = f"sim:stream {deltas}"
    traces = world.root / "traces"
    times: dict[str, list[float]] = {TRACED: [], UNTRACED: []}
    cpu: dict[str, list[float]] = {TRACED: [], UNTRACED: []}
    async with (
        _client(world, None) as (plain, plain_session),
        _client(world, traces) as (traced, traced_session),
    ):
        for _ in range(rounds):
            for name, peer, session in (
                (UNTRACED, plain, plain_session),
                (TRACED, traced, traced_session),
            ):
                chunks = peer.counts[CHUNKS]
                seconds, spent = await _turn(peer, session, text)
                if peer.counts[CHUNKS] - chunks != deltas:
                    got = peer.counts[CHUNKS] - chunks
                    raise RuntimeError(f"{name}: the adapter relayed {got} of {deltas} deltas")
                times[name].append(seconds)
                cpu[name].append(spent)
    # The traced adapter has ended: its trace is complete on disk, and whole.
    [trace] = traces.glob("trace-*.jsonl")
    end = json.loads(trace.read_bytes().splitlines()[-1])
    if end.get("capped") or end.get("lost"):
        raise RuntimeError(f"the trace did not record every frame ({end}): not a traced relay")
    written = trace.stat().st_size
    ratio = statistics.median(t / u for t, u in zip(times[TRACED], times[UNTRACED], strict=True))
    return Figure(
        key="traced_relay",
        title="relay with a session trace",
        measurements=(
            Measurement(TRACED, statistics.median(times[TRACED]), "s/turn"),
            Measurement(UNTRACED, statistics.median(times[UNTRACED]), "s/turn"),
            Measurement(
                "traced adapter CPU per relayed delta",
                statistics.median(cpu[TRACED]) / deltas * 1e6,
                "us",
            ),
            Measurement(
                "untraced adapter CPU per relayed delta",
                statistics.median(cpu[UNTRACED]) / deltas * 1e6,
                "us",
            ),
            Measurement("trace written", written / 1024 / 1024, "MiB"),
        ),
        ratios=(Ratio("traced / untraced", ratio, higher_is_better=False),),
        note=f"one turn of {deltas} agent-message deltas (sim:stream), median of {rounds} rounds",
    )
