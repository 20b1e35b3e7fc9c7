"""A trace read back, and its hosts played in place of Muse.

Contract: ``read_trace(path)`` parses a trace (``muse_acp.traces``) into a ``Trace``: its header,
its ACP frames in order, each host's frames as a ``sim.serve.replay.Transcript``, and its
decisions; ``ValueError`` names the first line that is not a trace line. ``ReplayLauncher`` is a
``host.launch.Launcher``: the n-th ``muse serve`` it is asked to start is the trace's n-th host,
played in this process by muse-sim's ``Player`` (which carries the values the live muse-acp
wrote in place of recorded ones, shared by all the hosts, into the recorded answers and notes
each departure from the recording), at the recorded pace times ``pace`` when it is not 0,
each request muse-acp sends checked by ``compare`` when given (``Player``); every other command
(``--version``, ``serve --help``) goes to ``fallback``. A host beyond the trace's is refused
the way a missing executable is.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from muse_acp.host.launch import Completed, HostProcess, Launcher
from muse_acp.rpc import JsonValue, encode_message
from muse_acp.rpc.memory import memory_stream_pair
from muse_acp.sim.serve.replay import Player, Transcript, transcript_of

__all__ = ["ReplayLauncher", "ReplayedHost", "Trace", "read_trace"]


@dataclass(slots=True)
class Trace:
    """A trace as read (see the module contract)."""

    header: dict[str, Any]
    acp: list[tuple[str, JsonValue]] = field(default_factory=list)
    """(``in`` or ``out``, frame) for every ACP frame, in order."""
    hosts: dict[str, Transcript] = field(default_factory=dict)
    """Each host's frames, by source (``msp1``...), in the order the hosts were started."""
    decisions: list[tuple[str, JsonValue]] = field(default_factory=list)

    @property
    def mode(self) -> str:
        """How the trace was redacted (``redacted`` or ``full``)."""
        return str(self.header.get("mode", "redacted"))

    def decision(self, name: str) -> JsonValue:
        """The value of the first decision called ``name`` (None when there is none)."""
        return next((value for key, value in self.decisions if key == name), None)


def read_trace(path: Path) -> Trace:
    """Parse the trace at ``path`` (see the module contract)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise ValueError(f"{path} is empty, not a muse-acp trace")
    header = json.loads(lines[0])
    if not isinstance(header, dict) or "trace" not in header:
        raise ValueError(f"{path}:1: not a muse-acp trace header")
    trace = Trace(header)
    hosts: dict[str, list[tuple[str, bytes]]] = {}
    times: dict[str, list[float | None]] = {}
    for number, line in enumerate(lines[1:], 2):
        entry = json.loads(line) if line.strip() else {}
        if not isinstance(entry, dict):
            raise ValueError(f"{path}:{number}: not a trace line")
        if "decision" in entry:
            trace.decisions.append((str(entry["decision"]), entry.get("value")))
            if entry["decision"] == "host" and isinstance(entry.get("value"), dict):
                hosts.setdefault(str(entry["value"].get("on")), [])
                times.setdefault(str(entry["value"].get("on")), [])
        elif entry.get("on") == "acp":
            trace.acp.append((str(entry.get("dir")), entry.get("frame")))
        elif isinstance(entry.get("on"), str):
            direction = "client" if entry.get("dir") == "out" else "server"
            frame = encode_message(entry.get("frame"))
            hosts.setdefault(entry["on"], []).append((direction, frame))
            at = entry.get("t")
            times.setdefault(entry["on"], []).append(at if isinstance(at, int | float) else None)
    trace.hosts = {name: transcript_of(frames, times[name]) for name, frames in hosts.items()}
    return trace


class ReplayedHost:
    """A trace's host played in process: a ``host.launch.HostProcess``."""

    def __init__(self, number: int, stdin: ByteSendStream, stdout: ByteReceiveStream) -> None:
        self._pid = -number
        self._stdin = stdin
        self._stdout = stdout
        self._exited = anyio.Event()
        self.returncode: int | None = None

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout

    @property
    def exited(self) -> anyio.Event:
        return self._exited

    def stderr_tail(self) -> str:
        return ""

    async def settle(self) -> None:
        return

    def end(self) -> None:
        self.returncode = 0
        self._exited.set()


class ReplayLauncher:
    """Starts the trace's hosts in turn (see the module contract)."""

    def __init__(
        self,
        trace: Trace,
        fallback: Launcher,
        *,
        pace: float = 0.0,
        compare: Callable[[bytes, bytes], str | None] | None = None,
    ) -> None:
        self.trace = trace
        self.fallback = fallback
        self.pace = pace
        self.compare = compare
        self.players: list[Player] = []
        self.learned: dict[str, str] = {}
        """What each recorded value the live muse-acp replaced stands for, for every host."""
        self._names = iter(trace.hosts)
        self._count = itertools.count(1)

    @asynccontextmanager
    async def serve(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None
    ) -> AsyncIterator[HostProcess]:
        name = next(self._names, None)
        if name is None:
            raise FileNotFoundError(f"the trace has no host for a further {' '.join(argv)}")
        player = Player(
            self.trace.hosts[name],
            name=name,
            learn=True,
            learned=self.learned,
            pace=self.pace,
            compare=self.compare,
        )
        self.players.append(player)
        (host_in, host_out), (client_in, client_out) = memory_stream_pair()
        host = ReplayedHost(next(self._count), client_out, client_in)
        async with anyio.create_task_group() as tasks:

            async def run() -> None:
                try:
                    await player.play(host_in, host_out)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                finally:
                    await host_out.aclose()
                    await host_in.aclose()
                    host.end()

            tasks.start_soon(run)
            try:
                yield host
            finally:
                await client_out.aclose()
                await client_in.aclose()
                tasks.cancel_scope.cancel()
                host.end()

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        budget: float,
        limit: int,
    ) -> Completed:
        return await self.fallback.run(argv, cwd=cwd, env=env, budget=budget, limit=limit)

    def departures(self) -> list[str]:
        """Where muse-acp's frames to its hosts departed from the trace, hosts in order."""
        found: list[str] = []
        for player in self.players:
            found += player.departures
        return found
