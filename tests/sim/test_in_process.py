"""The simulated host served in process, over memory streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.rpc import FrameReader, encode_message
from muse_acp.rpc.memory import memory_stream_pair
from muse_acp.sim.options.faults import Faults
from muse_acp.sim.options.settings import ServeOptions
from muse_acp.sim.options.versions import HOST_VERSIONS
from muse_acp.sim.serve.host import serve_streams
from muse_acp.sim.state.ids import new_uuid7

from .harness import WAIT, labels

pytestmark = pytest.mark.anyio


async def test_a_turn_runs_in_process_and_ends_with_the_input(tmp_path: Path) -> None:
    (client_in, client_out), (host_in, host_out) = memory_stream_pair()
    options = ServeOptions(home=tmp_path, version=HOST_VERSIONS["1.2.1"], faults=Faults())
    reader = FrameReader(client_in)

    async def send(message: dict[str, Any]) -> None:
        await client_out.send(encode_message(message) + b"\n")

    async def until(method: str) -> list[dict[str, Any]]:
        frames = []
        async for line in reader:
            assert isinstance(line, bytes)
            frames.append(json.loads(line))
            if frames[-1].get("method") == method:
                return frames
        raise AssertionError(f"the host stopped before {method}")

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(serve_streams, options, host_in, host_out)
            hello = {"clientInfo": {"name": "in_process", "version": "1"}}
            await send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
            await send({"jsonrpc": "2.0", "method": "initialized"})
            session_id = new_uuid7()
            start = {"commandId": new_uuid7(), "sessionId": session_id, "workspaceRoot": "/p"}
            await send({"jsonrpc": "2.0", "id": 2, "method": "session/start", "params": start})
            turn = {
                "commandId": new_uuid7(),
                "sessionId": session_id,
                "input": [{"type": "text", "text": "hi there"}],
                "reasoningEffort": "none",
            }
            await send({"jsonrpc": "2.0", "id": 3, "method": "turn/start", "params": turn})
            frames = await until("turn/completed")
            await client_out.aclose()
        for stream in (client_in, host_in, host_out):
            await stream.aclose()
    assert labels(frames) == [
        "result",
        "session/started",
        "result",
        "turn/started",
        "item/completed",
        "result",
        "item/started",
        "item/delta",
        "item/delta",
        "item/completed",
        "session/tokenUsage",
        "session/contextUsage",
        "turn/completed",
    ]
    assert (tmp_path / "sessions" / session_id / "events.jsonl").is_file()
