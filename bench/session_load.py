"""Figure: opening a long session, ``session/load`` through the adapter against reading it.

Contract: ``measure`` stores one session of each size in ``sizes`` (durable events, ascending)
straight into ``muse-sim``'s store (``bench.history``: a realistic mix of prompts, reasoning,
tool calls with output and diffs, usage and answers). One ``muse-acp serve`` and one bare MSP
client of a ``muse-sim serve`` host each open the smallest session once untimed (so the adapter's
catalog host runs, and both sides have their code loaded). Then, per size, ``rounds`` rounds each
take one relayed load and one direct read back to back: relayed is ``session/load`` sent to
answered (the adapter replays the whole history as ``session/update`` notifications before it
answers, and at least one update per turn must have arrived); direct is what the adapter asks of
Muse for it, done by the bare client: ``session/read`` without items, then ``view/page`` forward,
1,000 events a page, until a page has no ``nextCursor`` (every event must arrive). The figure is,
per size, the median seconds of each way, the median of the rounds' relayed / direct, the
adapter's CPU time per event (and the host's, reading directly: where the cores are all busy,
relayed / direct tends to their sum over the host's), and its peak resident set (``VmHWM``)
after the size's loads. CPU
per event should stay flat from the smallest size to the largest, and the peak should not grow
with the history: the adapter holds one page at a time. For a history of one page, where
nothing of the adapter's work overlaps Muse's, the figure also times in this process the least
of that work, decoding and validating the page as the adapter does (best of
``LEAST_WORK_PASSES``), against what loaded / read directly of ``GOAL`` leaves the adapter.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Final

import anyio

from bench.history import write_session
from bench.peer import Peer, peak_rss_mib, run_seconds, spawn_peer
from bench.report import Figure, Measurement, Ratio, ratios_of
from bench.world import World, adapter_command
from muse_acp import __version__
from muse_acp.agent.sessions.history import PAGE_SIZE
from muse_acp.agent.translation.translate import TRANSLATED
from muse_acp.agent.translation.view_events import read_event
from muse_acp.rpc import JsonObject, encode_message
from muse_acp.rpc.decoding import decode_frame
from muse_acp_wire import msp as wire

__all__ = ["measure"]

LOAD_TIMEOUT: Final = 600.0
WRITE_TIMEOUT: Final = 600.0
UPDATES: Final = "session/update:"
GOAL: Final = 1.5
"""Loaded / read directly aimed at."""
LEAST_WORK_PASSES: Final = 15


@dataclass(frozen=True, slots=True)
class _Size:
    events: int
    relayed: list[float]
    direct: list[float]
    cpu: list[float]
    """Adapter CPU seconds of each relayed load."""
    host_cpu: list[float]
    """The host's CPU seconds of each direct read."""
    peak: float
    least_work: float | None = None
    """Seconds the adapter's least work on a one-page history takes (None: more pages)."""


async def _relayed_load(peer: Peer, world: World, session_id: str, turns: int) -> float:
    updates = peer.counts.total()
    answers = peer.counts["session/update:user_message_chunk"]
    params: JsonObject = {"sessionId": session_id, "cwd": str(world.workspace), "mcpServers": []}
    started = time.perf_counter()
    await peer.request("session/load", params, wait=LOAD_TIMEOUT)
    elapsed = time.perf_counter() - started
    if peer.counts["session/update:user_message_chunk"] - answers < turns:
        raise RuntimeError("session/load replayed fewer prompts than the session has turns")
    if peer.counts.total() - updates < turns:
        raise RuntimeError("session/load replayed less than a update per turn")
    return elapsed


async def _direct_read(peer: Peer, session_id: str, events: int) -> float:
    read = 0
    cursor: str | None = None
    started = time.perf_counter()
    await peer.request(
        "session/read", {"sessionId": session_id, "excludeItems": True}, wait=LOAD_TIMEOUT
    )
    for _ in range(events // PAGE_SIZE + 2):
        params: JsonObject = {"sessionId": session_id, "limit": PAGE_SIZE, "direction": "forward"}
        if cursor is not None:
            params["cursor"] = cursor
        page = await peer.request("view/page", params, wait=LOAD_TIMEOUT)
        read += len(page["events"])
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    elapsed = time.perf_counter() - started
    if read != events:
        raise RuntimeError(f"view/page gave {read} of {events} stored events")
    return elapsed


def _least_work(page: JsonObject) -> float:
    """Seconds, best of ``LEAST_WORK_PASSES``, to decode ``page``'s frame and validate it and the
    events a replay reads, with the adapter's own code: what no replay of it can skip."""
    frame = encode_message({"jsonrpc": "2.0", "id": 1, "result": page})
    best = float("inf")
    for _ in range(LEAST_WORK_PASSES):
        started = time.perf_counter()
        decoded = decode_frame(frame)
        assert isinstance(decoded, dict)
        result = wire.ViewPageResult.model_validate(decoded["result"], by_alias=True, by_name=False)
        for event in result.events:
            if event.method in TRANSLATED:
                read_event(event)
        best = min(best, time.perf_counter() - started)
    return best


async def measure(
    world: World, *, sizes: Sequence[int] = (1_000, 10_000), rounds: int = 3
) -> Figure:
    """Seconds, adapter CPU per event and peak memory of loading each size, against reading it."""
    stored: list[tuple[int, str, int]] = []
    for events in sizes:
        write = partial(write_session, world.sim_home, world.workspace, events)
        with anyio.fail_after(WRITE_TIMEOUT):
            session_id, turns = await anyio.to_thread.run_sync(write, abandon_on_cancel=True)
        stored.append((events, session_id, turns))
    results: list[_Size] = []
    async with (
        spawn_peer(
            adapter_command(),
            env=world.env(),
            cwd=world.workspace,
            stderr=world.root / "load-adapter.stderr",
        ) as acp,
        spawn_peer(
            [str(world.muse_bin), "serve"],
            env=world.env(),
            cwd=world.workspace,
            stderr=world.root / "load-muse.stderr",
        ) as msp,
    ):
        init: JsonObject = {"protocolVersion": 1, "clientCapabilities": {}}
        await acp.request("initialize", init, wait=LOAD_TIMEOUT)
        client_info = {"name": "muse_acp_bench", "version": __version__}
        await msp.request("initialize", {"clientInfo": client_info}, wait=LOAD_TIMEOUT)
        await msp.notify("initialized")
        smallest, first_id, first_turns = stored[0]
        await _relayed_load(acp, world, first_id, first_turns)
        await _direct_read(msp, first_id, smallest)
        for events, session_id, turns in stored:
            relayed: list[float] = []
            direct: list[float] = []
            cpu: list[float] = []
            host_cpu: list[float] = []
            for _ in range(rounds):
                used = run_seconds(acp.pid)
                relayed.append(await _relayed_load(acp, world, session_id, turns))
                cpu.append(run_seconds(acp.pid) - used)
                used = run_seconds(msp.pid)
                direct.append(await _direct_read(msp, session_id, events))
                host_cpu.append(run_seconds(msp.pid) - used)
            peak = peak_rss_mib(acp.pid)
            least: float | None = None
            if events <= PAGE_SIZE:
                params: JsonObject = {"sessionId": session_id, "limit": PAGE_SIZE}
                page = await msp.request("view/page", params, wait=LOAD_TIMEOUT)
                least = _least_work(page)
            results.append(_Size(events, relayed, direct, cpu, host_cpu, peak, least))
    return _figure(results, rounds)


def _figure(results: list[_Size], rounds: int) -> Figure:
    measurements: list[Measurement] = []
    ratios: list[Ratio] = []
    for size in results:
        label = f"{size.events:,} events"
        ratio = statistics.median(r / d for r, d in zip(size.relayed, size.direct, strict=True))
        measurements += [
            Measurement(f"{label}: session/load", statistics.median(size.relayed), "s"),
            Measurement(f"{label}: read from muse-sim", statistics.median(size.direct), "s"),
            Measurement(
                f"{label}: adapter CPU per event",
                statistics.median(size.cpu) / size.events * 1e6,
                "us",
            ),
            Measurement(
                f"{label}: muse-sim CPU per event, read directly",
                statistics.median(size.host_cpu) / size.events * 1e6,
                "us",
            ),
            Measurement(f"{label}: adapter peak memory", size.peak, "MiB"),
        ]
        ratios.append(Ratio(f"{label}: loaded / read directly", ratio, higher_is_better=False))
        if size.least_work is not None:
            left = (GOAL - 1) * statistics.median(size.direct)
            measurements += [
                Measurement(
                    f"{label}: decoding and validating its page (in process)",
                    size.least_work * 1e3,
                    "ms",
                ),
                Measurement(f"{label}: what {GOAL} leaves the adapter", left * 1e3, "ms"),
            ]
            ratios += ratios_of(
                f"{label}: that least work / what {GOAL} leaves",
                size.least_work,
                left,
                higher_is_better=False,
            )
    small, large = results[0], results[-1]
    names = f"{large.events:,} / {small.events:,} events"
    ratios += [
        *ratios_of(
            f"adapter CPU per event, {names}",
            statistics.median(large.cpu) / large.events,
            statistics.median(small.cpu) / small.events,
            higher_is_better=False,
        ),
        Ratio(f"peak memory, {names}", large.peak / small.peak, higher_is_better=False),
    ]
    return Figure(
        key="session_load",
        title="loading a long session",
        measurements=tuple(measurements),
        ratios=tuple(ratios),
        note=(
            f"session/load through muse-acp serve against session/read and view/page ({PAGE_SIZE} "
            f"a page) straight from muse-sim; median of {rounds} rounds"
        ),
    )
