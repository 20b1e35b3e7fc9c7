"""A bare JSON-RPC client of a child process: the one client most figures measure through.

Contract: ``spawn_peer(argv, env=...)`` starts ``argv`` with piped stdin and stdout (its stderr
goes to a file, never to a pipe nobody reads) and yields a ``Peer``. The peer is deliberately
minimal and independent of muse-acp's runtime, so that what it costs stays the same from one
commit to the next and whichever agent it measures: it splits stdout on LF, decodes each line
with ``json.loads`` and nothing else, counts notifications by method (``session/update`` ones
also by update kind: ``session/update:agent_message_chunk``), matches responses to its requests
by id, and answers any request from the child with METHOD_NOT_FOUND. ``arrival(key)`` is set by
the next notification of ``key`` (a method, ``session/update:KIND`` or ``item/delta:FIELD``) and
``arrived_at[key]`` is the ``time.perf_counter`` of its reading, taken before any task wakes.
``request`` waits at most
``wait`` seconds and raises ``PeerError`` for an error answer or a child that went away. Leaving
the block closes the child's stdin and reaps it and its process group (killed if it lingers).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from muse_acp.rpc import JsonInput, JsonValue, encode_message, encode_request

__all__ = [
    "EXIT_WAIT",
    "Peer",
    "PeerError",
    "cpu_seconds",
    "peak_rss_mib",
    "rss_mib",
    "run_seconds",
    "spawn_peer",
]

EXIT_WAIT: Final = 10.0
"""Seconds a child gets to exit after its stdin closes before its group is killed."""
READ_BYTES: Final = 1 << 20
UPDATE: Final = "session/update"
DELTA: Final = "item/delta"


class PeerError(RuntimeError):
    """A request was answered with an error, or the child went away before answering."""


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a running process has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of stat(5); the split starts at field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_seconds(pid: int) -> float:
    """CPU time a running process's live threads have used so far, to the microsecond where the
    kernel says (``se.sum_exec_runtime`` in ``/proc/PID/task/*/sched``), else ``cpu_seconds``
    (in clock ticks). A thread that ended meanwhile is not counted: for work done by the
    threads that stay, such as an event loop's."""
    total = 0.0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for line in (task / "sched").read_text().splitlines():
                if line.startswith("se.sum_exec_runtime"):
                    total += float(line.rsplit(":", 1)[1]) / 1e3
                    break
            else:
                return cpu_seconds(pid)
    except (OSError, ValueError):
        return cpu_seconds(pid)
    return total


def _status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"process {pid} reports no {field}")


def peak_rss_mib(pid: int) -> float:
    """The peak resident set (``VmHWM``) of a running process, in MiB (Linux ``/proc``)."""
    return _status_mib(pid, "VmHWM")


def rss_mib(pid: int) -> float:
    """The current resident set (``VmRSS``) of a running process, in MiB (Linux ``/proc``)."""
    return _status_mib(pid, "VmRSS")


class _Answer:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: JsonValue = None
        self.error: str | None = None


class Peer:
    """A child process speaking JSON-RPC on its stdio (see the module contract)."""

    def __init__(self, process: Process, stdin: ByteSendStream) -> None:
        self.process = process
        self.counts: Counter[str] = Counter()
        """Notifications received so far, by method (and update kind)."""
        self._stdin = stdin
        self._writing = anyio.Lock()
        self._next_id = 1
        self._answers: dict[int, _Answer] = {}
        self._arrivals: dict[str, anyio.Event] = {}
        self.arrived_at: dict[str, float] = {}
        """When the notification that set each ``arrival`` was read (``time.perf_counter``)."""
        self._gone = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def arrival(self, key: str) -> anyio.Event:
        """An event set when the next ``key`` notification arrives (ask before sending): a
        method, ``session/update:KIND`` or ``item/delta:FIELD``."""
        return self._arrivals.setdefault(key, anyio.Event())

    async def request(self, method: str, params: JsonInput = None, *, wait: float = 60.0) -> Any:
        """The result of a request answered within ``wait`` seconds.

        Raises:
            PeerError: the child answered with an error or went away.
            TimeoutError: no answer within ``wait`` seconds.
        """
        request_id = self._next_id
        self._next_id += 1
        answer = self._answers[request_id] = _Answer()
        try:
            with anyio.fail_after(wait):
                await self._send(encode_request(request_id, method, params))
                await answer.done.wait()
        finally:
            self._answers.pop(request_id, None)
        if answer.error is not None:
            raise PeerError(f"{method}: {answer.error}")
        return answer.result

    async def new_session(self, cwd: str, *, wait: float = 60.0) -> str:
        """An ACP ``session/new`` in ``cwd``, answered within ``wait`` seconds: its id."""
        created = await self.request("session/new", {"cwd": cwd, "mcpServers": []}, wait=wait)
        session_id = created.get("sessionId") if isinstance(created, dict) else None
        if not isinstance(session_id, str):
            raise PeerError(f"session/new: no session id in {created!r}")
        return session_id

    async def notify(self, method: str, params: JsonInput = None) -> None:
        message: dict[str, JsonInput] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(encode_message(message))

    async def _send(self, frame: bytes) -> None:
        if self._gone:
            raise PeerError("the child process has gone away")
        async with self._writing:
            await self._stdin.send(frame + b"\n")

    async def read(self, stdout: ByteReceiveStream) -> None:
        """Handle everything the child writes until it closes its stdout."""
        pending = b""
        try:
            while True:
                lines = (pending + await stdout.receive(READ_BYTES)).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line.strip():
                        await self._handle(json.loads(line))
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            self._gone = True
            for answer in self._answers.values():
                answer.error = "the child process closed its output before answering"
                answer.done.set()

    async def _handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            request_id = message.get("id")
            answer = self._answers.get(request_id) if type(request_id) is int else None
            if answer is not None:
                if "error" in message:
                    answer.error = json.dumps(message["error"])[:500]
                else:
                    answer.result = message.get("result")
                answer.done.set()
        elif "id" in message:
            refusal: dict[str, JsonInput] = {
                "code": -32601,
                "message": f"the measuring client has no {method}",
            }
            await self._send(
                encode_message({"jsonrpc": "2.0", "id": message["id"], "error": refusal})
            )
        else:
            key = method
            if method == UPDATE:
                key = f"{method}:{message['params']['update']['sessionUpdate']}"
            self.counts[key] += 1
            if self._arrivals:
                detail = f"{method}:{message['params'].get('field')}" if method == DELTA else key
                for name in {method, detail}:
                    arrival = self._arrivals.pop(name, None)
                    if arrival is not None:
                        self.arrived_at[name] = time.perf_counter()
                        arrival.set()


async def _reap(process: Process) -> None:
    with anyio.CancelScope(shield=True):
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            if process.stdin is not None:
                await process.stdin.aclose()
        with anyio.move_on_after(EXIT_WAIT):
            await process.wait()
        with suppress(ProcessLookupError, PermissionError):
            # The child leads its own group: this also ends any host it started.
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        await process.aclose()


@asynccontextmanager
async def spawn_peer(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stderr: Path | None = None,
) -> AsyncIterator[Peer]:
    """Start ``argv`` and yield a connected ``Peer``; the child is always reaped."""
    target = os.devnull if stderr is None else stderr
    stderr_fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr_fd,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    finally:
        os.close(stderr_fd)
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        peer = Peer(process, process.stdin)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(peer.read, process.stdout)
            try:
                yield peer
            finally:
                tasks.cancel_scope.cancel()
    finally:
        await _reap(process)
