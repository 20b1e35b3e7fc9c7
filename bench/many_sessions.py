"""Figure: one ``muse-acp serve`` serving many sessions at once, each relaying a long turn.

Contract: ``measure`` starts one adapter and reads its resident memory (``VmRSS``) after
``initialize``; opens ``sessions`` sessions and reads it again (idle sessions: no host runs for
them yet); warms every session up with a one-line turn (so each has its own ``muse-sim`` host
running, as an editor's open threads do) and reads it again. It then times, in ``rounds`` rounds
taken in turn, one session alone relaying a turn of ``deltas`` agent-message deltas, and every
session relaying such a turn at the same time (all prompts sent together, timed until the last
answer); each prompt must end ``end_turn`` with every delta arrived as its own chunk. The figure
is the aggregate deltas per second of the concurrent turns against one session's alone (the
machine's cores are shared by the adapter and every host in both cases, so a ratio near one says
that the adapter adds no cost per extra session), the adapter's CPU per relayed delta in each
case, and resident memory per idle and per active session (the growth over the adapter's own
baseline divided by the number of sessions). The hosts' own memory and CPU are not counted.
"""

from __future__ import annotations

import statistics
import time
from typing import Final

import anyio

from bench.peer import Peer, cpu_seconds, rss_mib, spawn_peer
from bench.report import Figure, Measurement, ratios_of
from bench.world import World, adapter_command
from muse_acp.rpc import JsonObject

__all__ = ["measure"]

TURN_TIMEOUT: Final = 600.0
CHUNKS: Final = "session/update:agent_message_chunk"


async def _turn(peer: Peer, session_id: str, text: str) -> None:
    params: JsonObject = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    answer = await peer.request("session/prompt", params, wait=TURN_TIMEOUT)
    if not isinstance(answer, dict) or answer.get("stopReason") != "end_turn":
        raise RuntimeError(f"a turn ended with {answer!r}")


async def _timed(peer: Peer, session_ids: list[str], deltas: int) -> tuple[float, float]:
    """Seconds for every session in ``session_ids`` to relay a turn of ``deltas`` deltas at
    once, and the adapter CPU seconds it took; every delta must have arrived."""
    text = f"sim:stream {deltas}"
    chunks = peer.counts[CHUNKS]
    cpu = cpu_seconds(peer.pid)
    started = time.perf_counter()
    async with anyio.create_task_group() as turns:
        for session_id in session_ids:
            turns.start_soon(_turn, peer, session_id, text)
    elapsed = time.perf_counter() - started
    used = cpu_seconds(peer.pid) - cpu
    arrived = peer.counts[CHUNKS] - chunks
    if arrived != deltas * len(session_ids):
        raise RuntimeError(f"{arrived} of {deltas * len(session_ids)} deltas arrived")
    return elapsed, used


async def measure(
    world: World, *, sessions: int = 64, deltas: int = 2_000, rounds: int = 3
) -> Figure:
    """Aggregate relay rate of ``sessions`` concurrent turns against one session's alone."""
    stderr = world.root / "many-sessions-adapter.stderr"
    async with spawn_peer(
        adapter_command(), env=world.env(), cwd=world.workspace, stderr=stderr
    ) as peer:
        await peer.request(
            "initialize", {"protocolVersion": 1, "clientCapabilities": {}}, wait=TURN_TIMEOUT
        )
        baseline = rss_mib(peer.pid)
        session_ids: list[str] = []
        for _ in range(sessions):
            session_ids.append(await peer.new_session(str(world.workspace), wait=TURN_TIMEOUT))
        idle = rss_mib(peer.pid)
        async with anyio.create_task_group() as warm_ups:
            for session_id in session_ids:
                warm_ups.start_soon(_turn, peer, session_id, "warm up")
        active = rss_mib(peer.pid)
        alone: list[tuple[float, float]] = []
        together: list[tuple[float, float]] = []
        for _ in range(rounds):
            alone.append(await _timed(peer, session_ids[:1], deltas))
            together.append(await _timed(peer, session_ids, deltas))
    one_rate = deltas / statistics.median(seconds for seconds, _ in alone)
    all_rate = deltas * sessions / statistics.median(seconds for seconds, _ in together)
    one_cpu = statistics.median(cpu for _, cpu in alone) / deltas * 1e6
    all_cpu = statistics.median(cpu for _, cpu in together) / (deltas * sessions) * 1e6
    return Figure(
        key="many_sessions",
        title=f"{sessions} sessions at once",
        measurements=(
            Measurement(f"{sessions} concurrent turns, deltas/s in all", all_rate, "deltas/s"),
            Measurement("one session alone, deltas/s", one_rate, "deltas/s"),
            Measurement("adapter CPU per delta, concurrent", all_cpu, "us"),
            Measurement("adapter CPU per delta, alone", one_cpu, "us"),
            Measurement("adapter memory per idle session", (idle - baseline) / sessions, "MiB"),
            Measurement("adapter memory per active session", (active - baseline) / sessions, "MiB"),
            Measurement("adapter memory with every session active", active, "MiB"),
        ),
        ratios=ratios_of(f"{sessions} at once / one alone", all_rate, one_rate),
        note=(
            f"one agent, {sessions} sessions each with its own muse-sim host, turns of {deltas} "
            f"deltas (sim:stream), median of {rounds}"
        ),
    )
