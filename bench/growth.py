"""Figure: how the adapter's time and memory grow with a turn's tool output.

Contract: for each size in ``sizes_mib``, ``measure`` starts a fresh ``muse-acp serve``, warms
it up with a one-line turn (so its host is running and its baseline memory is in place), then
times ``repeats`` turns of ``sim:bash N`` (N bytes of tool output streamed through the adapter as
it is produced) from prompt to answer, and reads the adapter process's peak resident set
(``VmHWM``) right after, while it still runs. The figure is, per size, the median turn's seconds
per MiB, the adapter's CPU seconds per MiB (the cost that is the adapter's own, which other work on
the machine and the host's disk writes hardly move) and the peak MiB: the per-MiB costs should stay
flat (cost linear in the output) and the peak bounded (independent of the output). The host's own
time and memory are not counted in the CPU and memory figures: it is another process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bench.peer import Peer, cpu_seconds, peak_rss_mib, spawn_peer
from bench.report import Figure, Measurement, Ratio, ratios_of
from bench.world import World, adapter_command
from muse_acp.rpc import JsonObject

__all__ = ["measure"]

MIB: Final = 1 << 20
TURN_TIMEOUT: Final = 600.0


async def _turn(peer: Peer, session_id: str, text: str) -> tuple[float, float]:
    """Seconds the turn took, and CPU seconds the adapter spent on it."""
    params: JsonObject = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    cpu = cpu_seconds(peer.pid)
    started = time.perf_counter()
    answer = await peer.request("session/prompt", params, wait=TURN_TIMEOUT)
    elapsed = time.perf_counter() - started
    if not isinstance(answer, dict) or answer.get("stopReason") != "end_turn":
        raise RuntimeError(f"the turn ended with {answer!r}")
    return elapsed, cpu_seconds(peer.pid) - cpu


@dataclass(frozen=True, slots=True)
class _Size:
    seconds: float
    """Median seconds of the turns."""
    cpu: float
    """Median CPU seconds the adapter spent on a turn."""
    baseline_peak: float
    """Peak MiB of the adapter before the first turn of this size."""
    peak: float


async def _one_size(world: World, size: int, repeats: int) -> _Size:
    """Medians of ``repeats`` turns, and peak MiB of the adapter before and after them."""
    stderr = world.root / "growth-adapter.stderr"
    async with spawn_peer(
        adapter_command(), env=world.env(), cwd=world.workspace, stderr=stderr
    ) as peer:
        init: JsonObject = {"protocolVersion": 1, "clientCapabilities": {}}
        await peer.request("initialize", init, wait=TURN_TIMEOUT)
        session_id = await peer.new_session(str(world.workspace), wait=TURN_TIMEOUT)
        await _turn(peer, session_id, "warm up")
        baseline = peak_rss_mib(peer.pid)
        turns = [await _turn(peer, session_id, f"sim:bash {size}") for _ in range(repeats)]
        return _Size(
            seconds=statistics.median(seconds for seconds, _ in turns),
            cpu=statistics.median(cpu for _, cpu in turns),
            baseline_peak=baseline,
            peak=peak_rss_mib(peer.pid),
        )


async def measure(
    world: World, *, sizes_mib: Sequence[float] = (25, 50, 100), repeats: int = 3
) -> Figure:
    """Seconds per MiB (median of ``repeats`` turns) and peak adapter memory per output size."""
    measurements: list[Measurement] = []
    cpu_per_mib: list[float] = []
    peaks: list[float] = []
    baselines: list[float] = []
    for size_mib in sizes_mib:
        size = await _one_size(world, int(size_mib * MIB), repeats)
        cpu_per_mib.append(size.cpu / size_mib)
        peaks.append(size.peak)
        baselines.append(size.baseline_peak)
        label = f"{size_mib:g} MiB"
        measurements += [
            Measurement(f"{label}: turn", size.seconds, "s"),
            Measurement(f"{label}: time per MiB", size.seconds / size_mib, "s/MiB"),
            Measurement(f"{label}: adapter CPU per MiB", size.cpu / size_mib, "s/MiB"),
            Measurement(f"{label}: adapter peak memory", size.peak, "MiB"),
        ]
    measurements.append(
        Measurement("adapter peak memory after a one-line turn", min(baselines), "MiB")
    )
    return Figure(
        key="growth",
        title="growth with tool output",
        measurements=tuple(measurements),
        ratios=(
            *ratios_of(
                "CPU per MiB, largest / smallest",
                cpu_per_mib[-1],
                cpu_per_mib[0],
                higher_is_better=False,
            ),
            Ratio("peak memory, largest / smallest", peaks[-1] / peaks[0], False),
        ),
        note="sim:bash turns through muse-acp serve; 1.0 means linear time and flat memory",
    )
