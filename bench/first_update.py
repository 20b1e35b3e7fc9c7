"""Figure: how long a person waits for the first words of a reply, through the adapter and not.

Contract: ``measure`` times, from the moment a prompt is written to the moment the first text of
the agent's reply is read, the same one-line turn (``muse-sim`` reasons, then answers) four ways:

* warm, relayed: ``session/prompt`` to ``muse-acp serve`` on a session whose host already runs,
  to the first ``agent_message_chunk``;
* warm, direct: ``turn/start`` to a running ``muse-sim serve`` host, to the first ``item/delta``
  of the answer's text (``field: text``);
* cold after ``session/new``, relayed: the first prompt of a session just created (the adapter
  starts its host); direct: spawning ``muse serve``, ``initialize``, ``session/start`` and
  ``turn/start``, each sent as soon as the one before is answered, to the first text delta;
* cold after ``session/load``, relayed: the first prompt of a stored session just loaded (the
  adapter starts a host and resumes the session); direct: the same with ``session/resume``.

Warm, two more ways time the direct turn through processes that only copy bytes: a host whose
input and output each pass through ``cat``, and a host behind one Python process copying both
ways (``byte_relay``, the least a Python adapter could do): what one more process on the path
costs on this machine whatever it does, and what a Python one costs. Each round takes every way
once, back to back (``rounds`` warm, ``cold`` cold; the warm ways take turns at going first, as
a turn shares the cores with what the turn before it left running); the stored sessions are
written straight into ``muse-sim``'s store. Every clock is the measuring client's
(``Peer.arrived_at``: when the frame was read). The figure is the median and 95th percentile of
each way, the median over rounds of relayed / direct per case, and the adapter's CPU time per
warm turn (all of it, not only up to the first words). The warm relayed, direct and least
Python relay ways are also split (``turn_marks``, from the marks their ``muse-sim`` hosts leave)
into the way to Muse (the prompt written to ``turn/start`` read) and the way back (Muse's first
words written to read): what the adapter adds before Muse starts, and after Muse has spoken.
"""

from __future__ import annotations

import shlex
import shutil
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Final, Literal

import anyio

from bench.history import write_session
from bench.peer import Peer, run_seconds, spawn_peer
from bench.report import Figure, Measurement, Ratio
from bench.turn_marks import Split, Window, read_marks, split
from bench.world import World, adapter_command
from muse_acp import __version__
from muse_acp.ids import new_uuid7
from muse_acp.rpc import JsonObject
from muse_acp.sim.state.first_words import TIMINGS_ENV

__all__ = ["measure"]

TURN_TIMEOUT: Final = 120.0
CHUNK: Final = "session/update:agent_message_chunk"
TEXT_DELTA: Final = "item/delta:text"
PROMPT: Final = "Say hello."
STORED_EVENTS: Final = 20
"""Events of each stored session a cold load opens: a short earlier conversation."""


async def _relayed(peer: Peer, session_id: str) -> float:
    """Seconds from ``session/prompt`` written to its first agent message chunk read."""
    written, read = await _relayed_window(peer, session_id)
    return read - written


async def _relayed_window(peer: Peer, session_id: str) -> Window:
    """When ``session/prompt`` was written, and when its first agent message chunk was read."""
    arrived = peer.arrival(CHUNK)
    params: JsonObject = {"sessionId": session_id, "prompt": [{"type": "text", "text": PROMPT}]}
    started = time.perf_counter()
    answer = await peer.request("session/prompt", params, wait=TURN_TIMEOUT)
    if not arrived.is_set() or not isinstance(answer, dict) or answer["stopReason"] != "end_turn":
        raise RuntimeError(f"the relayed turn ended {answer!r} without a message chunk")
    return started, peer.arrived_at[CHUNK]


async def _turn(peer: Peer, session_id: str, started: float) -> float:
    """Seconds from ``started`` to the turn's first text delta; the turn is played out."""
    arrived, completed = peer.arrival(TEXT_DELTA), peer.arrival("turn/completed")
    params: JsonObject = {
        "commandId": new_uuid7(),
        "sessionId": session_id,
        "input": [{"type": "text", "text": PROMPT}],
    }
    await peer.request("turn/start", params, wait=TURN_TIMEOUT)
    with anyio.fail_after(TURN_TIMEOUT):
        await completed.wait()
    if not arrived.is_set():
        raise RuntimeError("the direct turn ended without a text delta")
    return peer.arrived_at[TEXT_DELTA] - started


async def _handshake(peer: Peer) -> None:
    client_info = {"name": "muse_acp_bench", "version": __version__}
    await peer.request("initialize", {"clientInfo": client_info}, wait=TURN_TIMEOUT)
    await peer.notify("initialized")


async def _start(peer: Peer, world: World) -> str:
    started = await peer.request(
        "session/start",
        {"commandId": new_uuid7(), "workspaceRoot": str(world.workspace)},
        wait=TURN_TIMEOUT,
    )
    session_id = started["session"]["sessionId"]
    assert isinstance(session_id, str)
    return session_id


def _env(world: World, marks: Path | None) -> dict[str, str]:
    """The world's environment; with ``marks``, muse-sim hosts leave their marks there."""
    env = world.env()
    if marks is not None:
        env[TIMINGS_ENV] = str(marks)
    return env


def _host(
    world: World,
    name: str,
    *,
    between: Literal["cat", "python"] | None = None,
    marks: Path | None = None,
) -> AbstractAsyncContextManager[Peer]:
    """A ``muse serve`` host; ``between="cat"``: behind byte copiers both ways (``cat``), one more
    process between client and host in each direction, as the adapter is; ``between="python"``:
    behind the least Python relay (``byte_relay``), one Python process copying both ways;
    ``marks``: the directory its first-words marks go to (``turn_marks``)."""
    stderr = world.root / f"first-update-{name}.stderr"
    argv = [str(world.muse_bin), "serve"]
    if between is not None:
        if between == "cat":
            cat = shutil.which("cat") or "cat"
            line = f"{cat} | {shlex.join(argv)} | {cat}"
        else:
            line = f"exec {shlex.join([sys.executable, '-m', 'bench.byte_relay', *argv])}"
        launcher = world.root / f"muse-behind-{between}"
        launcher.write_text(f"#!/bin/sh\n{line}\n")
        launcher.chmod(0o755)
        argv = [str(launcher)]
    return spawn_peer(argv, env=_env(world, marks), cwd=world.workspace, stderr=stderr)


async def _direct_cold(world: World, stored: str | None) -> float:
    """A host spawned, handshaken and given a turn on a new (or the ``stored``) session."""
    started = time.perf_counter()
    async with _host(world, "cold") as peer:
        await _handshake(peer)
        if stored is None:
            session_id = await _start(peer, world)
        else:
            resume: JsonObject = {"commandId": new_uuid7(), "sessionId": stored}
            resume["excludeItems"] = True
            await peer.request("session/resume", resume, wait=TURN_TIMEOUT)
            session_id = stored
        return await _turn(peer, session_id, started)


@asynccontextmanager
async def _adapter(world: World, marks: Path | None = None) -> AsyncIterator[Peer]:
    stderr = world.root / "first-update-adapter.stderr"
    env = _env(world, marks)
    async with spawn_peer(adapter_command(), env=env, cwd=world.workspace, stderr=stderr) as peer:
        init: JsonObject = {"protocolVersion": 1, "clientCapabilities": {}}
        await peer.request("initialize", init, wait=TURN_TIMEOUT)
        yield peer


async def _new_session(peer: Peer, world: World) -> str:
    params: JsonObject = {"cwd": str(world.workspace), "mcpServers": []}
    created = await peer.request("session/new", params, wait=TURN_TIMEOUT)
    session_id = created["sessionId"]
    assert isinstance(session_id, str)
    return session_id


async def _loaded_session(peer: Peer, world: World, stored: str) -> str:
    params: JsonObject = {"sessionId": stored, "cwd": str(world.workspace), "mcpServers": []}
    await peer.request("session/load", params, wait=TURN_TIMEOUT)
    return stored


async def _close(peer: Peer, session_id: str) -> None:
    """End a cold session's host, so the hosts of earlier rounds do not pile up."""
    await peer.request("session/close", {"sessionId": session_id}, wait=TURN_TIMEOUT)


async def _stored(world: World, count: int) -> list[str]:
    write = partial(write_session, world.sim_home, world.workspace, STORED_EVENTS)
    ids = []
    for seed in range(count):
        session_id, _ = await anyio.to_thread.run_sync(partial(write, seed=seed))
        ids.append(session_id)
    return ids


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def measure(world: World, *, rounds: int = 100, cold: int = 7) -> Figure:
    """Median and 95th percentile seconds to the first reply text (see the contract)."""
    ways: tuple[str, ...] = ("warm", "warm direct", "warm copied", "warm python")
    ways += ("new", "new direct", "load", "load direct")
    times: dict[str, list[float]] = {way: [] for way in ways}
    windows: dict[str, list[Window]] = {way: [] for way in _SPLIT_WAYS}
    stored = iter(await _stored(world, 2 * cold))
    marks = world.root / "first-words-marks"
    async with (
        _adapter(world, marks) as acp,
        _host(world, "warm", marks=marks) as msp,
        _host(world, "copied", between="cat") as copy,
        _host(world, "python", between="python", marks=marks) as python,
    ):
        warm_acp = await _new_session(acp, world)
        await _relayed(acp, warm_acp)  # every host running, every code path loaded
        warm = []
        for peer in (msp, copy, python):
            await _handshake(peer)
            warm.append(await _start(peer, world))
            await _turn(peer, warm[-1], time.perf_counter())
        used = [0.0]

        async def relayed() -> float:
            cpu = run_seconds(acp.pid)
            written, read = await _relayed_window(acp, warm_acp)
            used[0] += run_seconds(acp.pid) - cpu
            windows["warm"].append((written, read))
            return read - written

        async def timed(way: str, peer: Peer, session_id: str) -> float:
            written = time.perf_counter()
            elapsed = await _turn(peer, session_id, written)
            windows[way].append((written, written + elapsed))
            return elapsed

        async def direct() -> float:
            return await timed("warm direct", msp, warm[0])

        async def copied() -> float:
            return await _turn(copy, warm[1], time.perf_counter())

        async def through_python() -> float:
            return await timed("warm python", python, warm[2])

        warm_ways = {
            "warm": relayed,
            "warm direct": direct,
            "warm copied": copied,
            "warm python": through_python,
        }
        order = list(warm_ways)
        for index in range(rounds):
            # Each way goes first, second, third and last in turn: the way right after another
            # shares the cores with what that one left running (its host's end of turn).
            for way in order[index % 4 :] + order[: index % 4]:
                times[way].append(await warm_ways[way]())
        for _ in range(cold):
            session_id = await _new_session(acp, world)
            times["new"].append(await _relayed(acp, session_id))
            await _close(acp, session_id)
            times["new direct"].append(await _direct_cold(world, None))
            session_id = await _loaded_session(acp, world, next(stored))
            times["load"].append(await _relayed(acp, session_id))
            await _close(acp, session_id)
            times["load direct"].append(await _direct_cold(world, next(stored)))
    figure = _figure(times, rounds, cold)
    per_turn = Measurement("adapter CPU per warm turn (all of it)", used[0] / rounds * 1e3, "ms")
    found = read_marks(marks)  # left by the hosts as they ended, with the block
    parts = [_split_lines(way, split(found, windows[way])) for way in _SPLIT_WAYS]
    lines = (*figure.measurements, per_turn, *(line for way in parts for line in way))
    return replace(figure, measurements=lines)


_SPLIT_WAYS: Final = {
    "warm": "relayed",
    "warm direct": "direct",
    "warm python": "through the least Python relay",
}
"""The warm ways whose wait is split into its way to Muse and back (``turn_marks``)."""


def _split_lines(way: str, parts: list[Split]) -> tuple[Measurement, ...]:
    label = f"warm session, {_SPLIT_WAYS[way]}"
    to_muse = statistics.median(part.to_muse for part in parts) * 1e3
    back = statistics.median(part.back for part in parts) * 1e3
    return (
        Measurement(f"{label}: the way to Muse (turn/start read), median", to_muse, "ms"),
        Measurement(f"{label}: the way back (first words read), median", back, "ms"),
    )


_CASES: Final = (
    ("warm", "warm session"),
    ("new", "cold, first prompt after session/new"),
    ("load", "cold, first prompt after session/load"),
)


def _figure(times: dict[str, list[float]], rounds: int, cold: int) -> Figure:
    measurements: list[Measurement] = []
    ratios: list[Ratio] = []
    for key, label in _CASES:
        relayed, direct = times[key], times[f"{key} direct"]
        for way, values in (("relayed", relayed), ("direct", direct)):
            measurements += [
                Measurement(f"{label}, {way}: median", statistics.median(values) * 1e3, "ms"),
                Measurement(f"{label}, {way}: 95th percentile", _p95(values) * 1e3, "ms"),
            ]
        ratio = statistics.median(r / d for r, d in zip(relayed, direct, strict=True))
        ratios.append(Ratio(f"{label}: relayed / direct, median", ratio, higher_is_better=False))
        if key == "warm":
            copied = times["warm copied"]
            measurements.append(
                Measurement(
                    f"{label}, through byte copiers: median", statistics.median(copied) * 1e3, "ms"
                )
            )
            floor = statistics.median(c / d for c, d in zip(copied, direct, strict=True))
            ratios.append(Ratio(f"{label}: copied / direct, median", floor, False))
            python = times["warm python"]
            measurements.append(
                Measurement(
                    f"{label}, through the least Python relay: median",
                    statistics.median(python) * 1e3,
                    "ms",
                )
            )
            least = statistics.median(p / d for p, d in zip(python, direct, strict=True))
            ratios.append(Ratio(f"{label}: least Python relay / direct, median", least, False))
    return Figure(
        key="first_update",
        title="first words of a reply",
        measurements=tuple(measurements),
        ratios=tuple(ratios),
        note=(
            f"prompt written to first agent_message_chunk (relayed) or first text item/delta "
            f"(direct); {rounds} warm rounds, {cold} cold ones"
        ),
    )
