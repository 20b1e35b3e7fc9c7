"""Drive ``muse-acp serve`` with the official ACP Python SDK client, muse-sim as its host.

Each test gets its own temporary world: a workspace, the simulator's state directory, the
adapter's data directory (holding, unless the world is ``first_start``, what an earlier start
of muse-acp remembered of the world's Muse: its probe, so ``initialize`` knows its version as
on any later start; see ``Startup``), a capture of every MSP request that reached the host, and
the agent's stderr in a file (read by tests on failure, never a pipe left unread). The recording
client keeps every update and every raw frame the agent wrote, so tests can assert exact
sequences; every test's frames are checked when it ends (``recorded_frames``, used by this
package's conftest with ``frame_check``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import acp
import anyio
from acp import schema
from acp.client.connection import ClientSideConnection
from pydantic import TypeAdapter

from muse_acp.agent.handshake.startup import Startup
from muse_acp.children import EXIT_GRACE, TERMINATE_GRACE
from muse_acp.config import load_config
from muse_acp.sim.in_process import SimLauncher
from muse_acp.sim.launcher import DEFAULT_VERSION, SimWorld
from muse_acp.sim.options.settings import CAPTURE_ENV
from tests.frames_seen import Frame, record_frames
from tests.in_process import serving_agent

WAIT = 30.0
"""Seconds any single wait in these tests may take before it counts as a hang."""
SHUTDOWN_WAIT = EXIT_GRACE + TERMINATE_GRACE + 5.0
"""Seconds the agent may take to exit once its stdin is closed."""


@dataclass
class World(SimWorld):
    """The package's scratch world, with a capture of every MSP request that reached a host,
    the agent's stderr in a file and debug logging."""

    extra_env: dict[str, str] = field(default_factory=dict)
    first_start: bool = False
    """The agent runs as on its first start with this Muse: nothing is remembered of it."""

    @property
    def capture(self) -> Path:
        return self.root / "capture.jsonl"

    @property
    def stderr(self) -> Path:
        return self.root / "agent-stderr.log"

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = super().env(base)
        env.update({CAPTURE_ENV: str(self.capture), "MUSE_ACP_LOG": "debug"})
        env.update(self.extra_env)
        return env

    def host_requests(self, method: str | None = None) -> list[dict[str, Any]]:
        """Every MSP request that reached a host, optionally only one method's."""
        if not self.capture.exists():
            return []
        lines = self.capture.read_text(encoding="utf-8").split("\n")
        frames = [json.loads(line) for line in lines if line]
        return [f for f in frames if method is None or f.get("method") == method]

    def session_hosts(self) -> list[dict[str, Any]]:
        """The ``initialize`` of every host started but those that checked sign-in (the only
        ones opting in to Muse's experimental methods)."""
        return [
            frame
            for frame in self.host_requests("initialize")
            if not (frame["params"].get("capabilities") or {}).get("experimentalApi")
        ]

    def stderr_text(self) -> str:
        return self.stderr.read_text(errors="replace") if self.stderr.exists() else ""


def make_world(root: Path, version: str = DEFAULT_VERSION, *, signed_in: bool = True) -> World:
    return World.make(root, version, signed_in=signed_in)


_ELICITATION_RESPONSE: TypeAdapter[Any] = TypeAdapter(schema.CreateElicitationResponse)


def failure_of(error: acp.RequestError) -> dict[str, Any]:
    """The ``data.failure`` object of an agent error (an AssertionError when it is missing)."""
    data = error.data
    assert isinstance(data, dict), f"error without data: {error}"
    failure = data.get("failure")
    assert isinstance(failure, dict), f"error without data.failure: {error}"
    return failure


PermissionPolicy = Callable[[schema.RequestPermissionRequest], schema.RequestPermissionResponse]


def choose(kind: str) -> PermissionPolicy:
    """A policy that selects the first option of ``kind``."""

    def policy(request: schema.RequestPermissionRequest) -> schema.RequestPermissionResponse:
        option = next(o for o in request.options if o.kind == kind)
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    return policy


class RecordingClient:
    """An ACP client that records what the agent sends and answers permissions by policy."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permission_requests: list[schema.RequestPermissionRequest] = []
        self.elicitations: list[dict[str, Any]] = []
        self.policy: PermissionPolicy = choose("allow_once")
        self.on_permission: Callable[[], Awaitable[None]] | None = None
        self.answer_elicitations = False
        """Accept each form with the first offered label (or a free-text answer)."""
        self.fail_elicitations = False
        """Answer each form with a JSON-RPC error, as a client whose form broke."""
        self._changed = anyio.Event()

    def on_connect(self, conn: Any) -> None:
        return None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.nudge()

    def nudge(self) -> None:
        """Wake the waits: something arrived (also a raw frame the SDK's models cannot read,
        such as a notice, which ``wait_until`` may be waiting for in ``Agent.frames``)."""
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, session_id: str, kind: str, count: int = 1) -> Any:
        """Wait (bounded) until ``count`` updates of ``kind`` arrived; return the last one."""
        with anyio.fail_after(WAIT):
            while True:
                seen = [u for s, u in self.updates if s == session_id and u.session_update == kind]
                if len(seen) >= count:
                    return seen[count - 1]
                await self._changed.wait()

    async def wait_until(self, holds: Callable[[], bool]) -> None:
        """Wait (bounded) until ``holds()`` is true of the updates received so far."""
        with anyio.fail_after(WAIT):
            while not holds():
                await self._changed.wait()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        request = schema.RequestPermissionRequest(
            session_id=session_id, tool_call=tool_call, options=options, field_meta=kwargs or None
        )
        self.permission_requests.append(request)
        if self.on_permission is not None:
            await self.on_permission()
        return self.policy(request)

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        schema_dump = mode.requested_schema.model_dump(by_alias=True, exclude_none=True)
        self.elicitations.append({"message": message, "requestedSchema": schema_dump})
        if self.fail_elicitations:
            raise acp.RequestError.internal_error({"details": "the form could not be shown"})
        if self.answer_elicitations:
            content: dict[str, Any] = {}
            for name, field_schema in schema_dump.get("properties", {}).items():
                labels = field_schema.get("enum") or field_schema.get("items", {}).get("enum")
                if field_schema.get("type") == "array":
                    content[name] = labels[:1]
                else:
                    content[name] = labels[0] if labels else "free text answer"
            return _ELICITATION_RESPONSE.validate_python({"action": "accept", "content": content})
        return _ELICITATION_RESPONSE.validate_python({"action": "decline"})

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise acp.RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u.session_update for s, u in self.updates if session_id is None or s == session_id]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(
            u.content.text
            for s, u in self.updates
            if s == session_id and u.session_update == kind and u.content.type == "text"
        )


@dataclass
class Agent:
    conn: ClientSideConnection
    client: RecordingClient
    world: World
    frames: list[tuple[str, dict[str, Any]]]
    """Every raw message, as ("in"|"out", message) from the client's point of view."""

    opened: dict[str, list[Any]] = field(default_factory=dict)
    """The config options each session was opened with (``new_session``)."""

    async def new_session(self) -> str:
        response = await self.conn.new_session(cwd=str(self.world.workspace), mcp_servers=[])
        self.opened[response.session_id] = list(response.config_options or [])
        return response.session_id

    def options(self, session_id: str) -> list[Any]:
        """The session's config options as the client last heard them: the latest
        ``config_option_update``, else those ``new_session`` answered."""
        updates = [
            update
            for session, update in self.client.updates
            if session == session_id and update.session_update == "config_option_update"
        ]
        return list(updates[-1].config_options) if updates else self.opened[session_id]

    async def prompt(self, session_id: str, text: str) -> schema.PromptResponse:
        return await self.conn.prompt(session_id=session_id, prompt=[acp.text_block(text)])

    def raw_updates(self, session_id: str, *kinds: str) -> list[dict[str, Any]]:
        """The session's updates as sent (of ``kinds`` only, when given), in order: for kinds
        the SDK's models do not have or would reshape."""
        return [
            message["params"]["update"]
            for direction, message in self.frames
            if direction == "in"
            and message.get("method") == "session/update"
            and message["params"]["sessionId"] == session_id
            and (not kinds or message["params"]["update"].get("sessionUpdate") in kinds)
        ]


@asynccontextmanager
async def running_agent(
    world: World,
    client: RecordingClient | None = None,
    *,
    capabilities: schema.ClientCapabilities | Mapping[str, Any] | None = None,
    process: bool = False,
    launcher: SimLauncher | None = None,
) -> AsyncIterator[Agent]:
    """Serve the agent under the SDK client and initialize it: in this process by default
    (``tests.in_process``: the code of ``muse-acp serve`` on pipes, hosts played in process by
    ``launcher``, a fresh ``SimLauncher`` unless given), or, with ``process``, as ``muse-acp
    serve`` processes with ``muse-sim`` processes for hosts (for tests whose hosts work hard at
    once: in one process they would share one core). ``capabilities`` given as JSON go out as
    written (for members the SDK's models lack)."""
    client = client or RecordingClient()
    frames: list[Frame] = []
    recorded = record_frames(frames)

    def observe(event: Any) -> None:
        direction = (
            "in" if getattr(event.direction, "value", event.direction) == "incoming" else "out"
        )
        frames.append((direction, event.message))
        client.nudge()

    try:
        if not world.first_start:
            await remember_muse(world)
        async with _connected(world, client, observe, process, launcher) as conn:
            info = schema.Implementation(name="muse-acp-tests", version="0")
            if isinstance(capabilities, Mapping):
                params = {
                    "protocolVersion": acp.PROTOCOL_VERSION,
                    "clientCapabilities": dict(capabilities),
                    "clientInfo": info.model_dump(by_alias=True, exclude_none=True),
                }
                with anyio.fail_after(WAIT):
                    await conn._conn.send_request("initialize", params)
            else:
                await conn.initialize(
                    protocol_version=acp.PROTOCOL_VERSION,
                    client_capabilities=capabilities or schema.ClientCapabilities(),
                    client_info=info,
                )
            yield Agent(conn, client, world, frames)
    finally:
        recorded.ended = True


async def remember_muse(world: World, env: Mapping[str, str] | None = None) -> None:
    """Leave what a start of muse-acp remembers of the world's Muse (its probe), by the agent's
    own code, as a user's earlier start would have (see the module contract); ``env``: the
    agent's environment, when not the world's."""
    env = env or world.env()
    with anyio.fail_after(WAIT):
        await Startup(load_config(env), env, SimLauncher()).settle()


@asynccontextmanager
async def _connected(
    world: World,
    client: RecordingClient,
    observe: Callable[[Any], None],
    process: bool,
    launcher: SimLauncher | None,
) -> AsyncIterator[ClientSideConnection]:
    if not process:
        streams = serving_agent(world.env(), log=world.stderr, launcher=launcher)
        async with streams as (reader, writer):
            conn = ClientSideConnection(
                cast(acp.Client, client),
                writer,
                reader,
                observers=[observe],
                use_unstable_protocol=True,
            )
            try:
                yield conn
            finally:
                await conn.close()
        return
    with world.stderr.open("ab") as stderr:
        async with acp.spawn_agent_process(
            cast(acp.Client, client),
            sys.executable,
            "-m",
            "muse_acp",
            "serve",
            env=world.env(),
            cwd=str(world.root),
            # The agent may take up to its hosts' exit and terminate graces to stop (a hung
            # host is stopped, not waited for); the SDK's own 2 s would race that exit.
            transport_kwargs={"stderr": stderr, "shutdown_timeout": SHUTDOWN_WAIT},
            observers=[observe],
            use_unstable_protocol=True,
        ) as (conn, _process):
            yield conn


# -- extension methods -------------------------------------------------------------------


async def ext_request(agent: Agent, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send the ACP extension request ``method`` (spelled with its leading ``_``), bounded.

    Raises:
        acp.RequestError: the agent answered with an error.
    """
    if not method.startswith("_"):
        raise ValueError(f"extension methods start with '_', got {method!r}")
    with anyio.fail_after(WAIT):
        return await agent.conn.ext_method(method[1:], params)


async def host_flags(agent: Agent, session: str) -> str:
    """The session's host flags and approval mode, as the simulated model reports them."""
    before = len(agent.client.text(session))
    await agent.prompt(session, "sim:flags")
    reply = agent.client.text(session)[before:]
    start = reply.index("[host flags:")
    return reply[start : reply.index("]", start) + 1]
