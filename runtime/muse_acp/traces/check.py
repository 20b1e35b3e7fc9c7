"""A trace turned into a test: its ACP side played against muse-acp, its hosts replayed.

Contract: ``check_trace`` serves muse-acp in this process (untraced) with the trace's hosts
replayed (``replay.ReplayLauncher``), sends it the trace's ACP input frames in order, each once
muse-acp has written as many frames as it had written before it in the trace (with the live
values learned so far in place of recorded ones, answers to muse-acp's requests under the ids
it used, ``cwd`` members naming ``cwd``, as do the hosts' answers), and matches what it writes
with the recorded output and each request it sends a host with the recorded one
(``compare.Matcher``; paths under ``cwd`` read as under the recorded folder). ``Outcome.first``
is the first difference of the output (None: none), whose ``describe`` names the frame;
``host_departures`` lists where muse-acp's MSP frames departed from the trace (missing, extra
or different). Every wait for muse-acp is bounded by ``wait`` seconds; the hosts answer at the
recorded pace times ``pace`` (0: at once).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import anyio

from muse_acp.config import AdapterConfig, TraceSetting
from muse_acp.host.launch import Launcher
from muse_acp.rpc import FrameReader, JsonValue, encode_message
from muse_acp.rpc.memory import memory_stream_pair
from muse_acp.traces.compare import Difference, Matcher
from muse_acp.traces.redaction import Redactor
from muse_acp.traces.replay import ReplayLauncher, Trace

__all__ = ["Outcome", "check_trace"]


@dataclass(slots=True)
class Outcome:
    """What the check found."""

    first: Difference | None = None
    written: int = 0
    """ACP output frames muse-acp wrote."""
    host_departures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.first is None and not self.host_departures


def _parsed(line: bytes) -> JsonValue:
    try:
        value: JsonValue = json.loads(line)
    except ValueError:
        return {"unreadable": len(line)}
    return value


def _prepared(frame: JsonValue, pairs: Mapping[str, str], cwd: str, key: str = "") -> JsonValue:
    """A recorded input frame as sent (see the module contract)."""
    if isinstance(frame, dict):
        return {k: _prepared(v, pairs, cwd, k) for k, v in frame.items()}
    if isinstance(frame, list):
        return [_prepared(v, pairs, cwd, key) for v in frame]
    if isinstance(frame, str):
        return cwd if key == "cwd" else pairs.get(frame, frame)
    return frame


def _request(requests: Matcher, recorded: bytes, live: bytes) -> str | None:
    """Why a request muse-acp sent a host differs from the recorded one (None: it does not)."""
    return requests.compare(_parsed(recorded), _parsed(live))


def _recorded_cwds(trace: Trace, cwd: str) -> dict[str, str]:
    """Each folder the trace's client worked in -> ``cwd``, for the hosts to say it too."""
    found: dict[str, str] = {}
    for direction, frame in trace.acp:
        params = frame.get("params") if isinstance(frame, dict) else None
        folder = params.get("cwd") if isinstance(params, dict) else None
        if direction == "in" and isinstance(folder, str):
            found[folder] = cwd
    return found


async def check_trace(
    trace: Trace,
    config: AdapterConfig,
    environ: Mapping[str, str],
    fallback: Launcher,
    *,
    cwd: str,
    wait: float = 20.0,
    pace: float = 0.0,
) -> Outcome:
    """Check ``trace`` against muse-acp (see the module contract); ``fallback`` runs the
    commands that are not hosts (the executable's probes)."""
    from muse_acp.agent.handshake.startup import Startup
    from muse_acp.agent.server import serve_streams

    mode: TraceSetting = "full" if trace.mode == "full" else "redacted"
    redactor = Redactor(mode, environ)
    redactor.refresh()
    recorded = [frame for direction, frame in trace.acp if direction == "out"]
    folders = _recorded_cwds(trace, cwd)
    requests = Matcher([], redactor)  # what muse-acp sends its hosts, one request at a time
    requests.roots.update({live: folder for folder, live in folders.items()})
    launcher = ReplayLauncher(trace, fallback, pace=pace, compare=partial(_request, requests))
    launcher.learned.update(folders)
    startup = Startup(config, environ, launcher)
    startup.tracer = None  # the live run is compared here, not traced again
    # The executable is probed before ``initialize``, as on every start but a machine's very
    # first (when muse-acp remembers a probe of it), so the answer offers what the host can do.
    await startup.settle()
    matcher = Matcher(recorded, redactor)
    matcher.roots.update({live: folder for folder, live in folders.items()})
    live: list[JsonValue] = []
    grown = anyio.Event()
    ended = anyio.Event()
    (agent_in, agent_out), (client_in, client_out) = memory_stream_pair()

    async def read() -> None:
        nonlocal grown
        try:
            async for line in FrameReader(client_in):
                frame = _parsed(line) if isinstance(line, bytes) else None
                live.append(frame)
                matcher.offer(frame)
                grown.set()
                grown = anyio.Event()
        finally:
            await client_in.aclose()
            ended.set()
            grown.set()

    async def until(count: int) -> bool:
        with anyio.move_on_after(wait):
            while len(live) < count and matcher.first is None and not ended.is_set():
                await grown.wait()
        return len(live) >= count

    async def serve() -> None:
        try:
            await serve_streams(startup, agent_in, agent_out)
        finally:
            await agent_out.aclose()  # the end of muse-acp's output, as its stdout closing
            await agent_in.aclose()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(serve)
        tasks.start_soon(read)
        written = 0
        for direction, frame in trace.acp:
            if direction == "out":
                written += 1
                continue
            if not await until(written) or matcher.first is not None:
                break
            sent = _prepared(frame, matcher.pairs, cwd)
            if isinstance(sent, dict) and "method" not in sent and "id" in sent:
                sent["id"] = matcher.ids.get(sent["id"], sent["id"])  # an answer to muse-acp
            await client_out.send(encode_message(sent) + b"\n")
        if matcher.first is None and not await until(len(recorded)) and matcher.unmatched:
            matcher.fail(matcher.unmatched[0], None, f"muse-acp wrote nothing more in {wait:g}s")
        await client_out.aclose()
        with anyio.move_on_after(wait):
            await ended.wait()  # the rest, until muse-acp ends its output
        tasks.cancel_scope.cancel()
    if matcher.first is None and matcher.unmatched:
        matcher.fail(matcher.unmatched[0], None, "muse-acp never wrote it")
    return Outcome(matcher.first, len(live), launcher.departures())
