"""Figure: ``session/update`` notifications per second through muse-acp's JSON-RPC runtime.

Contract: ``measure`` runs the echo workload (``workload``) against three peers, each its own
process started the same way (``python -m bench.echo_*``): muse-acp's runtime (``echo_ours``),
the official ACP SDK (``echo_sdk``) and, as the physical limit, the same frames pre-serialized and
written to a plain pipe (``echo_pipe``). One bare client (``peer``) drives all three: initialize,
``session/new``, a warm-up prompt, then ``rounds`` timed prompts of ``updates`` updates each,
taken in turn from each peer so that any drift of the machine hits all of them alike. A prompt is
timed from sending it to its response, by which point the client has handled every update sent
before it; a peer that sends any other number of updates fails the figure. The CPU time each
agent process spent on those prompts is reported too (per update): unlike the rates, it hardly
moves when other work shares the machine.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from types import MappingProxyType
from typing import Final

from bench.peer import Peer, cpu_seconds, spawn_peer
from bench.report import Figure, Measurement, Ratio, ratios_of
from bench.workload import prompt_params
from bench.world import World, python_module
from muse_acp.rpc import JsonObject

__all__ = ["OURS", "PIPE", "SDK", "measure"]

OURS: Final = "muse-acp runtime"
SDK: Final = "official ACP SDK"
PIPE: Final = "plain pipe (limit)"
UNIT: Final = "updates/s"
PROMPT_TIMEOUT: Final = 120.0
CHUNKS: Final = "session/update:agent_message_chunk"


def _commands(updates: int) -> Mapping[str, list[str]]:
    return MappingProxyType(
        {
            OURS: python_module("bench.echo_ours"),
            SDK: python_module("bench.echo_sdk"),
            PIPE: python_module("bench.echo_pipe", str(updates)),
        }
    )


@asynccontextmanager
async def _started(world: World, argv: list[str]) -> AsyncIterator[Peer]:
    stderr = world.root / f"{argv[2]}.stderr"
    async with spawn_peer(argv, env=world.env(), cwd=world.workspace, stderr=stderr) as peer:
        init: JsonObject = {"protocolVersion": 1, "clientCapabilities": {}}
        await peer.request("initialize", init, wait=PROMPT_TIMEOUT)
        await peer.request(
            "session/new", {"cwd": str(world.workspace), "mcpServers": []}, wait=PROMPT_TIMEOUT
        )
        yield peer


async def _prompt(peer: Peer, updates: int) -> tuple[float, float]:
    """Seconds the prompt took, and CPU seconds the peer spent on it."""
    before = peer.counts[CHUNKS]
    cpu = cpu_seconds(peer.pid)
    started = time.perf_counter()
    await peer.request("session/prompt", prompt_params(updates), wait=PROMPT_TIMEOUT)
    elapsed = time.perf_counter() - started
    received = peer.counts[CHUNKS] - before
    if received != updates:
        raise RuntimeError(f"peer {peer.pid} sent {received} updates for a prompt of {updates}")
    return elapsed, cpu_seconds(peer.pid) - cpu


async def measure(world: World, *, updates: int = 5000, rounds: int = 4) -> Figure:
    """Updates per second of each peer over ``rounds`` prompts of ``updates`` updates."""
    elapsed: dict[str, float] = {}
    cpu: dict[str, float] = {}
    async with AsyncExitStack() as stack:
        peers = {
            name: await stack.enter_async_context(_started(world, argv))
            for name, argv in _commands(updates).items()
        }
        for peer in peers.values():
            await _prompt(peer, updates)
        for _ in range(rounds):
            for name, peer in peers.items():
                seconds, used = await _prompt(peer, updates)
                elapsed[name] = elapsed.get(name, 0.0) + seconds
                cpu[name] = cpu.get(name, 0.0) + used
    rate = {name: updates * rounds / seconds for name, seconds in elapsed.items()}
    cpu_us = {name: used / (updates * rounds) * 1e6 for name, used in cpu.items()}
    return Figure(
        key="runtime_throughput",
        title="runtime throughput",
        measurements=(
            *(Measurement(name, rate[name], UNIT) for name in (OURS, SDK, PIPE)),
            Measurement(f"{OURS}: CPU per update", cpu_us[OURS], "us"),
            Measurement(f"{SDK}: CPU per update", cpu_us[SDK], "us"),
        ),
        ratios=(
            Ratio("muse-acp / SDK", rate[OURS] / rate[SDK]),
            Ratio("muse-acp / pipe", rate[OURS] / rate[PIPE]),
            *ratios_of(
                "CPU per update, muse-acp / SDK", cpu_us[OURS], cpu_us[SDK], higher_is_better=False
            ),
        ),
        note=f"{rounds} prompts of {updates} agent_message_chunk updates per peer, same client",
    )
