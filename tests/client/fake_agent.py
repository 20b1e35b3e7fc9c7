"""An in-memory ACP agent built on ``muse_acp.rpc``, scripted per test, and a client for it.

The fake answers ``initialize``, the session methods and ``_muse/readOutput`` from plain data
the test sets; ``session/prompt`` runs the test's ``prompt_script``. It records every request
params object it receives (raw JSON) and every notification. Every wait is bounded by ``WAIT``.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Final

import anyio

from muse_acp.client import AgentConnection, connect_streams
from muse_acp.rpc import (
    Connection,
    FrameReader,
    FrameWriter,
    JsonObject,
    JsonValue,
    RequestContext,
    RequestId,
    Result,
    RpcError,
)
from muse_acp.rpc.memory import memory_stream_pair
from muse_acp.tasks import task_group
from muse_acp_wire import acp

WAIT: Final = 5.0
"""Upper bound, in seconds, on any single wait in these tests."""
TEST_BUDGET: Final = 10.0
"""Upper bound, in seconds, on a whole test that uses ``fake_client``."""

SESSION_ID: Final = "fake-session-1"
FORK_ID: Final = "fake-fork-1"

PromptScript = Callable[["FakeAgent", str], Awaitable[str]]
"""Runs one prompt of a session and returns its stop reason."""


async def end_turn(agent: FakeAgent, session_id: str) -> str:
    return "end_turn"


def text_chunk(text: str) -> JsonObject:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


class FakeAgent:
    """A scripted ACP agent (see the module docstring)."""

    def __init__(self) -> None:
        self.connection: Connection | None = None
        self.requests: list[tuple[str, JsonValue]] = []
        self.request_ids: list[RequestId] = []
        """The id of each request in ``requests``."""
        self.notifications: list[tuple[str, JsonValue]] = []
        self.notified = anyio.Event()
        self.requested = anyio.Event()
        """Set when a request arrives (replace it with a new event to wait for the next)."""
        self.protocol_version = 1
        self.initialize_meta: JsonObject | None = None
        self.prompt_script: PromptScript = end_turn
        self.after_new: list[JsonObject] = []
        """Updates sent right after the ``session/new`` response."""
        self.replay: list[JsonObject] = []
        """Updates sent during ``session/load``, before its response."""
        self.list_pages: list[JsonObject] = [{"sessions": []}]
        self.output = b""
        self.page_limits: dict[int, int] = {}
        """How many bytes a read at each offset returns at most (elsewhere: as many as asked)."""
        self.held_offsets: set[int] = set()
        """Reads at these offsets are never answered (until the client withdraws them)."""
        self.withdrawn: list[JsonValue] = []
        """The offsets of held reads that were cancelled, in order."""
        self.withdrawal = anyio.Event()
        """Set when a held read is cancelled."""
        self.answer_first_page_after_the_next_is_asked = False
        """The read at offset 0 is answered only once a read at another offset arrived."""
        self.page_override: Callable[[JsonObject], JsonObject] | None = None
        self.refuse: dict[str, RpcError] = {}
        self.updates_sent = 0

    # -- sending --------------------------------------------------------------------------

    async def send_update(self, session_id: str, update: JsonObject) -> None:
        assert self.connection is not None
        await self.connection.notify("session/update", {"sessionId": session_id, "update": update})
        self.updates_sent += 1

    async def ask(self, method: str, params: acp.RequestPermissionRequest | JsonObject) -> Any:
        assert self.connection is not None
        return await self.connection.request(method, params)

    async def wait_for_notification(self, method: str) -> JsonValue:
        with anyio.fail_after(WAIT):
            while True:
                for name, params in self.notifications:
                    if name == method:
                        return params
                await self.notified.wait()
                self.notified = anyio.Event()

    def params_of(self, method: str) -> list[JsonValue]:
        return [params for name, params in self.requests if name == method]

    # -- MessageHandler -------------------------------------------------------------------

    async def handle_notification(self, method: str, params: JsonValue | None) -> None:
        self.notifications.append((method, params))
        self.notified.set()

    async def handle_request(
        self, method: str, params: JsonValue | None, ctx: RequestContext
    ) -> Result:
        self.requests.append((method, params))
        self.request_ids.append(ctx.request_id)
        self.requested.set()
        if method in self.refuse:
            raise self.refuse[method]
        assert isinstance(params, dict)
        match method:
            case "initialize":
                result: JsonObject = {"protocolVersion": self.protocol_version}
                if self.initialize_meta is not None:
                    result["_meta"] = self.initialize_meta
                return result
            case "session/new":
                for update in self.after_new:
                    ctx.after_response(partial(self.send_update, SESSION_ID, update))
                return {"sessionId": SESSION_ID, "modes": _MODES}
            case "session/load":
                for update in self.replay:
                    await self.send_update(str(params["sessionId"]), update)
                return {"modes": _MODES}
            case "session/list":
                return self.list_pages[_page_index(params)]
            case "session/close" | "session/set_mode":
                return {}
            case "session/resume":
                return {"modes": _MODES}
            case "session/fork":
                return {"sessionId": FORK_ID, "modes": _MODES}
            case "session/set_config_option":
                return {"configOptions": [_option(params["configId"], params["value"])]}
            case "_muse/steer":
                return {"status": "accepted", "turnId": params["expectedTurnId"]}
            case "_session/steering":
                return {"outcome": "injected"}
            case "session/prompt":
                return {"stopReason": await self.prompt_script(self, str(params["sessionId"]))}
            case "_muse/readOutput":
                await self._hold(params)
                return self._read(params)
            case _:
                raise RpcError.method_not_found(method)

    async def _hold(self, params: JsonObject) -> None:
        offset = params["offsetBytes"]
        if offset in self.held_offsets:
            try:
                await anyio.sleep_forever()  # until the client's $/cancel_request cancels this
            finally:
                self.withdrawn.append(offset)
                self.withdrawal.set()
        if offset == 0 and self.answer_first_page_after_the_next_is_asked:
            with anyio.fail_after(WAIT):
                while not any(
                    isinstance(read, dict) and read["offsetBytes"] != 0
                    for read in self.params_of("_muse/readOutput")
                ):
                    await self.requested.wait()
                    self.requested = anyio.Event()

    def _read(self, params: JsonObject) -> JsonObject:
        offset, length = params["offsetBytes"], params["lengthBytes"]
        assert isinstance(offset, int)
        assert isinstance(length, int)
        length = min(length, self.page_limits.get(offset, length))
        data = self.output[offset : offset + length]
        try:
            content, encoding = data.decode("utf-8"), "utf8"
        except UnicodeDecodeError:
            content, encoding = base64.b64encode(data).decode(), "base64"
        page: JsonObject = {
            "sessionId": params["sessionId"],
            "itemId": params["itemId"],
            "outputRef": params["outputRef"],
            "content": content,
            "encoding": encoding,
            "mediaType": "text/plain",
            "offsetBytes": offset,
            "byteLen": len(data),
            "eof": offset + len(data) >= len(self.output),
        }
        return self.page_override(page) if self.page_override is not None else page


_MODES: Final[JsonObject] = {
    "currentModeId": "default",
    "availableModes": [{"id": "default", "name": "Ask"}, {"id": "plan", "name": "Plan"}],
}


def _option(config_id: JsonValue, value: JsonValue) -> JsonObject:
    if isinstance(value, bool):
        return {"type": "boolean", "id": config_id, "name": "Option", "currentValue": value}
    choices: list[JsonValue] = [{"value": value, "name": "Chosen"}]
    return {
        "type": "select",
        "id": config_id,
        "name": "Option",
        "currentValue": value,
        "options": choices,
    }


def _page_index(params: JsonObject) -> int:
    cursor = params.get("cursor")
    return int(cursor.removeprefix("page-")) if isinstance(cursor, str) else 0


@asynccontextmanager
async def fake_client(
    agent: FakeAgent, *, transport_buffer: int = 256, **options: Any
) -> AsyncIterator[AgentConnection]:
    """A client connected to ``agent`` in memory; ``options`` go to ``connect_streams``.

    The whole block, the test's body included, must finish within ``TEST_BUDGET`` seconds.
    """
    (client_rx, client_tx), (agent_rx, agent_tx) = memory_stream_pair(transport_buffer)
    connection = Connection(FrameReader(agent_rx), FrameWriter(agent_tx), agent, name="fake")
    agent.connection = connection
    try:
        with anyio.fail_after(TEST_BUDGET):
            async with task_group() as tasks:
                await tasks.start(connection.serve)
                async with connect_streams(
                    client_rx, client_tx, startup_timeout=WAIT, **options
                ) as client:
                    yield client
                await connection.aclose()
    finally:
        for stream in (client_rx, client_tx, agent_rx, agent_tx):
            await stream.aclose()
