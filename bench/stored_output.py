"""Figure: reading a large stored tool output back through ``_muse/readOutput``.

Contract: ``measure`` runs one turn of ``sim:bash N`` (``size_mib`` MiB of tool output, which
``muse-sim`` stores) through ``muse-acp serve`` with the stored-output extension negotiated,
then reads the output back with the client library (``Session.read_output``) in pages of
``page_mib`` MiB, from the first request to the last page decoded. The limit it is set against
is the same number of bytes copied through a plain pipe by a child process (``cat`` of a file
holding the same bytes, spawn to end of stream). Reads and copies alternate, ``rounds`` of each;
the figure is the median MiB/s of both and the median over rounds of one round's ratio. A read
that returns any other number of bytes fails it.

Beside them, two limits of any Python relay of stored output. The JSON work no design can skip
on these protocols is timed in this process: the host encoding a page's text as a JSON string
(MSP carries it so) and the client decoding it from a frame (ACP carries it so), with
pydantic-core, the fastest codec the runtime has; the adapter in between could at best pass the
string on untouched. That CPU time, shared perfectly by two cores, is the least wall time a
page can take, and its ratio to the pipe is the ceiling the read could reach with no I/O,
framing or checks at all. And in each round, after the copy, the same bytes go through the
least such a relay could do as three processes (``stored_floor``: the host encodes, the middle
forwards the bytes unread, the client decodes), timed by its client from first byte to last;
a conforming adapter only adds to that. The goal ratio is the read against that relay, round by
round. Its limit on two cores follows from the codec: the least relay runs one encode and one
decode side by side (a page takes the longer of the two), while an adapter that checks the
page's text must decode it once more, so three codec passes share two cores (a page takes at
least half their sum); the ratio of those two times is the most the goal ratio can reach.
"""

from __future__ import annotations

import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import anyio
from pydantic_core import from_json, to_json

from bench.report import Figure, Measurement, Ratio, ratios_of
from bench.world import World, adapter_command, remember_muse
from muse_acp.client import connect, extensions
from muse_acp.client.output import decode_page, output_ref
from muse_acp.sim.model.outputs import TEXT_UNIT, pattern_chunks

__all__ = ["PIPE", "READ", "measure"]

MIB: Final = 1 << 20
READ: Final = "_muse/readOutput (client library)"
PIPE: Final = "plain pipe (limit)"
CODEC: Final = "JSON codec CPU per MiB: host encodes, client decodes"
ENCODE: Final = "JSON encode CPU per MiB (host)"
DECODE: Final = "JSON decode CPU per MiB (client; the adapter checking a page pays it too)"
CODEC_RUNS: Final = 20
LEAST: Final = "least Python relay: host encodes, middle forwards unread, client decodes"
TIMEOUT: Final = 600.0
_COPY: Final = "import shutil, sys; shutil.copyfileobj(open(sys.argv[1], 'rb'), sys.stdout.buffer)"


def _ignore(line: str) -> None:
    return None


@asynccontextmanager
async def _stored_output(
    world: World, size: int
) -> AsyncIterator[Callable[[int], Awaitable[float]]]:
    """A session whose turn stored ``size`` bytes, as a read of them all: seconds it took."""
    await remember_muse(world)  # stored output is offered once Muse's version is known
    async with connect(
        adapter_command(),
        env=world.env(),
        cwd=str(world.workspace),
        capabilities=extensions(),
        on_stderr=_ignore,
    ) as agent:
        session = await agent.new_session(str(world.workspace))
        refs = [
            ref
            async for update in session.prompt(f"sim:bash {size}")
            if (ref := output_ref(update))
        ]
        if not refs:
            raise RuntimeError("the turn announced no stored output")

        async def read(page_bytes: int) -> float:
            received = 0
            started = time.perf_counter()
            async for page in session.read_output(refs[-1], page_bytes=page_bytes):
                received += len(decode_page(page))
            elapsed = time.perf_counter() - started
            if received != size:
                raise RuntimeError(f"read {received} of {size} stored bytes")
            return elapsed

        yield read


def _pipe_source(world: World, size: int) -> Path:
    source = world.root / "pipe-source"
    with source.open("wb") as file:
        for chunk in pattern_chunks(TEXT_UNIT, size, MIB):
            file.write(chunk)
    return source


async def _copy_through_pipe(source: Path, size: int) -> float:
    cat = shutil.which("cat")
    argv = [cat, str(source)] if cat else [sys.executable, "-c", _COPY, str(source)]
    received = 0
    started = time.perf_counter()
    async with await anyio.open_process(
        argv, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as process:
        assert process.stdout is not None
        try:
            while True:
                received += len(await process.stdout.receive(MIB))
        except anyio.EndOfStream:
            pass
        await process.wait()
    elapsed = time.perf_counter() - started
    if received != size:
        raise RuntimeError(f"the pipe carried {received} of {size} bytes")
    return elapsed


async def _least_relay(world: World, source: Path, size: int, page: int) -> float:
    """Seconds ``size`` bytes of ``source`` take through ``stored_floor``'s three processes."""
    stage = [sys.executable, "-m", "bench.stored_floor"]
    command = " | ".join(
        shlex.join(argv)
        for argv in (
            [*stage, "host", str(source), str(size), str(page)],
            [*stage, "forward"],
            [*stage, "client"],
        )
    )
    done = await anyio.run_process(command, env=world.env(), stderr=subprocess.DEVNULL)
    received, seconds = done.stdout.split()
    if int(received) != size:
        raise RuntimeError(f"the least relay carried {int(received)} of {size} bytes")
    return float(seconds)


def _codec_seconds_per_mib() -> tuple[float, float]:
    """CPU seconds to encode a MiB of the turn's output as a JSON string, and to decode it from
    a page frame (medians of ``CODEC_RUNS``)."""
    text = b"".join(pattern_chunks(TEXT_UNIT, MIB, MIB)).decode()
    frame = b'{"jsonrpc":"2.0","id":1,"result":{"content":' + to_json(text) + b"}}"
    encodes, decodes = [], []
    for _ in range(CODEC_RUNS):
        started = time.process_time()
        to_json(text)
        encoded = time.process_time()
        from_json(frame)
        encodes.append(encoded - started)
        decodes.append(time.process_time() - encoded)
    return statistics.median(encodes), statistics.median(decodes)


def _two_core_ceiling(encode: float, decode: float) -> float:
    """The most a conforming read can reach against the least relay on two cores: the least
    relay's page takes the longer of its two passes, run side by side; a conforming one runs
    three passes (the adapter decodes too), at best half their sum (module contract)."""
    conforming = max(encode, decode, (encode + 2 * decode) / 2)
    return max(encode, decode) / conforming if conforming > 0 else 1.0


async def measure(
    world: World, *, size_mib: float = 64, page_mib: float = 1, rounds: int = 3
) -> Figure:
    """MiB/s of reading ``size_mib`` MiB in ``page_mib`` MiB pages, and of a pipe."""
    size, page_bytes = int(size_mib * MIB), int(page_mib * MIB)
    source = _pipe_source(world, size)
    reads: list[float] = []
    pipes: list[float] = []
    leasts: list[float] = []
    with anyio.fail_after(TIMEOUT):
        async with _stored_output(world, size) as read:
            for _ in range(rounds):
                reads.append(await read(page_bytes))
                pipes.append(await _copy_through_pipe(source, size))
                leasts.append(await _least_relay(world, source, size, page_bytes))
    read_s, pipe_s = statistics.median(reads), statistics.median(pipes)
    read_rate, pipe_rate = size / MIB / read_s, size / MIB / pipe_s
    # Each round's read and copy run back to back: their ratio is not tipped by a change of load.
    ratio = statistics.median(pipe / read for read, pipe in zip(reads, pipes, strict=True))
    least = statistics.median(pipe / each for each, pipe in zip(leasts, pipes, strict=True))
    against_least = statistics.median(each / read for read, each in zip(reads, leasts, strict=True))
    encode, decode = _codec_seconds_per_mib()
    codec = encode + decode
    return Figure(
        key="stored_output",
        title="stored-output throughput",
        measurements=(
            Measurement(READ, read_rate, "MiB/s"),
            Measurement(PIPE, pipe_rate, "MiB/s"),
            Measurement(LEAST, size / MIB / statistics.median(leasts), "MiB/s"),
            Measurement("seconds per 1 MiB page", read_s / -(-size // page_bytes), "s"),
            Measurement(CODEC, codec * 1e3, "ms"),
            Measurement(ENCODE, encode * 1e3, "ms"),
            Measurement(DECODE, decode * 1e3, "ms"),
        ),
        ratios=(
            Ratio("readOutput / least Python relay (goal >= 0.8)", against_least),
            Ratio("its two-core ceiling: 2 codec passes / 3", _two_core_ceiling(encode, decode)),
            Ratio("readOutput / pipe", ratio),
            Ratio("least Python relay / pipe", least),
            # Two cores sharing the codec's CPU time perfectly: MiB/s = 2 / seconds per MiB.
            *ratios_of(
                "ceiling of the JSON codec alone on two cores / pipe",
                2 / codec if codec > 0 else 0.0,
                pipe_rate,
            ),
        ),
        note=f"{size_mib:g} MiB of sim:bash output read in {page_mib:g} MiB pages, "
        f"median of {rounds} rounds",
    )
