"""A raw NDJSON client for one long-lived ``muse-acp serve``: it sends what no SDK would.

The agent runs as an anyio subprocess in an isolated world (``make_world``: muse-sim as the host,
its own data and simulator directories), with its stderr in a file rather than an unread pipe.
Every stdout line is kept exactly as written (``lines``); lines that are JSON objects are also
sorted: responses by id (keyed by the id's JSON text, so ``1``, ``"1"`` and ``null`` stay apart)
and notifications in arrival order. Requests the agent sends are answered at once: a permission
request with its first allow option, anything else with METHOD_NOT_FOUND. Every wait is bounded
by ``WAIT`` seconds. ``answers`` overrides how the requests of one method are answered.
``stop_reading`` makes it stop reading stdout (as a client that froze) until ``read_again``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import anyio
from anyio.abc import Process, TaskGroup

from muse_acp.sim.in_process import SimLauncher
from tests.agent_wire.harness import World, remember_muse
from tests.frames_seen import Frame, record_frames
from tests.in_process import AgentTask, agent_task

__all__ = ["WAIT", "RawAgent", "id_key", "raw_agent"]

WAIT: Final = 30.0
"""Seconds any single wait may take before it counts as a hang."""

MAX_STDOUT_LINE: Final = 64 * 1024 * 1024
"""Longest stdout line accepted; the agent's frames are far smaller, so more means a runaway."""

DRIVER_PREFIX: Final = "driver-"
"""Ids of the requests this client makes itself; fuzzed ids never start with it."""

EXTENSIONS: Final[dict[str, Any]] = {
    "_meta": {"muse/output": 1, "muse/steering": 1, "steering": {"supported": True}}
}
"""Client capabilities opting in to both Muse extensions, so their methods are reachable."""


def id_key(request_id: object) -> str:
    """The key responses to ``request_id`` are filed under: the id as compact JSON."""
    return json.dumps(request_id, separators=(",", ":"))


def _allow_first(params: Any) -> dict[str, Any]:
    options = params.get("options", []) if isinstance(params, dict) else []
    chosen = next((o for o in options if o.get("kind") == "allow_once"), None)
    chosen = chosen or (options[0] if options else None)
    if chosen is None:
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}


class RawAgent:
    """One running ``muse-acp serve`` and everything it wrote (see the module contract)."""

    def __init__(self, process: Process | AgentTask, world: World, tasks: TaskGroup) -> None:
        self.process = process
        self.world = world
        self.lines: list[bytes] = []
        """Every stdout line, without its LF."""
        self.responses: dict[str, list[dict[str, Any]]] = {}
        self.notifications: list[dict[str, Any]] = []
        self.agent_requests: list[dict[str, Any]] = []
        self.answers: dict[str, Callable[[Any], dict[str, Any]]] = {}
        """Per method: the reply members (``result`` or ``error``) for a request's params."""
        self._tasks = tasks
        self._changed = anyio.Event()
        self._reading = anyio.Event()
        self._reading.set()
        self._next_id = 0
        self._write_lock = anyio.Lock()
        self.frames: list[Frame] = []
        self._sent = bytearray()
        """Every JSON object written either way, for the end-of-test check (``frame_check``)."""

    @property
    def spawned(self) -> Process:
        """The agent's process (``raw_agent(..., process=True)`` only)."""
        assert isinstance(self.process, Process), "the agent runs in process here"
        return self.process

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    async def write(self, data: bytes) -> None:
        """Write raw bytes to the agent's stdin (whole, never interleaved with another write)."""
        assert self.process.stdin is not None
        with anyio.fail_after(WAIT):
            async with self._write_lock:
                await self.process.stdin.send(data)
        self._sent += data
        *complete, rest = bytes(self._sent).split(b"\n")
        self._sent = bytearray(rest if len(rest) <= MAX_STDOUT_LINE else b"")
        for line in complete:
            with suppress(ValueError, RecursionError):  # fuzzed frames are anything
                sent = json.loads(line)
                if isinstance(sent, dict):
                    self.frames.append(("out", sent))

    async def send(self, message: Mapping[str, Any]) -> None:
        await self.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def next_id(self) -> str:
        self._next_id += 1
        return f"{DRIVER_PREFIX}{self._next_id}"

    async def start_request(self, method: str, params: Any = None) -> str:
        """Send a request without waiting for it; return the key its response is filed under."""
        request_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return id_key(request_id)

    async def response(self, key: str) -> dict[str, Any]:
        """The (first) response filed under ``key``, waiting for it."""
        await self.wait_for_responses(Counter({key: 1}))
        return self.responses[key][0]

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and return its response message (result or error)."""
        return await self.response(await self.start_request(method, params))

    async def result(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request that must succeed and return its result."""
        response = await self.request(method, params)
        assert "result" in response, f"{method} failed: {response.get('error')}"
        result = response["result"]
        assert isinstance(result, dict)
        return result

    async def initialize(self) -> dict[str, Any]:
        return await self.result(
            "initialize", {"protocolVersion": 1, "clientCapabilities": EXTENSIONS}
        )

    async def new_session(self) -> str:
        result = await self.result(
            "session/new", {"cwd": str(self.world.workspace), "mcpServers": []}
        )
        session_id = result["sessionId"]
        assert isinstance(session_id, str)
        return session_id

    async def prompt_text(self, session_id: str, text: str) -> dict[str, Any]:
        return await self.request(
            "session/prompt",
            {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]},
        )

    async def wait_for_responses(self, expected: Counter[str]) -> None:
        """Wait until at least ``expected[key]`` responses arrived for every key."""
        await self.wait_until(
            lambda: all(len(self.responses.get(k, ())) >= n for k, n in expected.items()),
            f"responses for {sorted(expected)}",
        )

    async def wait_until(self, condition: Callable[[], bool], what: str) -> None:
        try:
            with anyio.fail_after(WAIT):
                while not condition():
                    assert self.alive, f"the agent exited while waiting for {what}"
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"timed out waiting for {what}; stderr tail:\n{self.world.stderr_text()[-3000:]}"
            ) from None

    def response_count(self) -> int:
        return sum(len(found) for found in self.responses.values())

    def stop_reading(self) -> None:
        """Read nothing more from the agent's stdout (at most the read under way) until
        ``read_again``: its pipe fills, and then its writes wait."""
        self._reading = anyio.Event()

    def read_again(self) -> None:
        self._reading.set()

    async def read_stdout(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        partial = bytearray()
        try:
            while True:
                await self._reading.wait()
                try:
                    chunk = await stdout.receive()
                except anyio.EndOfStream:
                    break
                partial += chunk
                *complete, rest = bytes(partial).split(b"\n")
                partial = bytearray(rest)
                assert len(partial) <= MAX_STDOUT_LINE, "the agent wrote a runaway line"
                for line in complete:
                    self._take(line)
                self._notify()
        finally:
            if partial:
                self.lines.append(bytes(partial))
            self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _take(self, line: bytes) -> None:
        self.lines.append(line)
        try:
            message = json.loads(line)
        except ValueError:
            return  # kept in ``lines``; tests of stdout purity look there
        if not isinstance(message, dict):
            return
        self.frames.append(("in", message))
        if "method" in message and "id" in message:
            self.agent_requests.append(message)
            self._tasks.start_soon(self._answer_agent_request, message)
        elif "method" in message:
            self.notifications.append(message)
        else:
            self.responses.setdefault(id_key(message.get("id")), []).append(message)

    async def _answer_agent_request(self, message: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        answer = self.answers.get(message["method"])
        if answer is not None:
            reply.update(answer(message.get("params")))
        elif message["method"] == "session/request_permission":
            reply["result"] = _allow_first(message.get("params"))
        else:
            reply["error"] = {"code": -32601, "message": "not offered by this test client"}
        # If the agent already ended, the test that ended it says so.
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self.send(reply)


@asynccontextmanager
async def raw_agent(
    world: World,
    env: Mapping[str, str] | None = None,
    *,
    process: bool = False,
    launcher: SimLauncher | None = None,
) -> AsyncIterator[RawAgent]:
    """Serve the agent in ``world`` (plus ``env``) and yield its raw client: in this process
    (``tests.in_process.agent_task``, hosts started by ``launcher`` when given), or, with
    ``process``, as a ``muse-acp serve`` process
    (for what only a process shows: signals, its exit, and that its stdout carries nothing but
    frames).

    Unless the world is ``first_start``, what an earlier start remembered of its Muse is left
    first (``harness.remember_muse``). On exit stdin is closed, and the agent must then end by
    itself within ``WAIT``.
    """
    environment = {**world.env(), "MUSE_ACP_IDLE_TIMEOUT": "600", **(env or {})}
    if not world.first_start:
        await remember_muse(world, environment)
    if not process:
        async with (
            agent_task(environment, log=world.stderr, launcher=launcher) as task,
            _driving(task, world) as agent,
        ):
            yield agent
        return
    with world.stderr.open("ab") as stderr:
        spawned = await anyio.open_process(
            [sys.executable, "-m", "muse_acp", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=environment,
            cwd=world.root,
        )
        async with spawned, _driving(spawned, world) as agent:
            yield agent


@asynccontextmanager
async def _driving(process: Process | AgentTask, world: World) -> AsyncIterator[RawAgent]:
    """The raw client of ``process``, reading its stdout until the block ends, then stopping it
    (``_stop``)."""
    async with anyio.create_task_group() as tasks:
        agent = RawAgent(process, world, tasks)
        recorded = record_frames(agent.frames)
        tasks.start_soon(agent.read_stdout)
        try:
            yield agent
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(agent)
            tasks.cancel_scope.cancel()
            recorded.ended = True


async def _stop(agent: RawAgent) -> None:
    assert agent.process.stdin is not None
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await agent.process.stdin.aclose()
    with anyio.move_on_after(WAIT):
        await agent.process.wait()
    if agent.process.returncode is None:
        agent.process.kill()
        await agent.process.wait()
