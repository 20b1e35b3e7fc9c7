"""Figure: how long an agent takes from spawn to its ``initialize`` answer.

Contract: ``measure`` starts ``muse-acp serve`` (with ``muse-sim`` as its Muse, which it probes
beside its answer) and the official SDK's echo agent (``echo_sdk``) ``runs`` times each, in turn,
the same way: ``python -m ...`` with the ``initialize`` request written as soon as the process
exists, timed until the answer's line has been read. The figure is the median of each and their
ratio. Every process is reaped before the next starts.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from typing import Final

import anyio

from bench.peer import EXIT_WAIT
from bench.report import Figure, Measurement, Ratio
from bench.world import World, adapter_command, python_module

__all__ = ["OURS", "SDK", "measure"]

OURS: Final = "muse-acp serve"
SDK: Final = "official ACP SDK echo agent"
START_TIMEOUT: Final = 60.0
INITIALIZE: Final = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize",'
    b'"params":{"protocolVersion":1,"clientCapabilities":{}}}\n'
)


async def _time_to_initialize(world: World, argv: list[str]) -> float:
    started = time.perf_counter()
    process = await anyio.open_process(
        argv, env=world.env(), cwd=world.workspace, stderr=subprocess.DEVNULL
    )
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None
    assert stdout is not None
    try:
        await stdin.send(INITIALIZE)
        line = b""
        with anyio.fail_after(START_TIMEOUT):
            while not line.endswith(b"\n"):
                line += await stdout.receive()
        elapsed = time.perf_counter() - started
        if b'"result"' not in line:
            raise RuntimeError(f"{argv} answered initialize with {line[:200]!r}")
        return elapsed
    finally:
        with anyio.CancelScope(shield=True):
            await stdin.aclose()
            with anyio.move_on_after(EXIT_WAIT):
                await process.wait()
            if process.returncode is None:
                process.kill()
            await process.aclose()


async def measure(world: World, *, runs: int = 7) -> Figure:
    """Median seconds from spawn to the ``initialize`` answer, over ``runs`` starts each."""
    commands = {OURS: adapter_command(), SDK: python_module("bench.echo_sdk")}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(await _time_to_initialize(world, argv))
    ours, sdk = statistics.median(times[OURS]), statistics.median(times[SDK])
    return Figure(
        key="cold_start",
        title="cold start",
        measurements=(Measurement(OURS, ours, "s"), Measurement(SDK, sdk, "s")),
        ratios=(Ratio("muse-acp / SDK", ours / sdk, higher_is_better=False),),
        note=f"spawn to initialize answer, median of {runs}",
    )
