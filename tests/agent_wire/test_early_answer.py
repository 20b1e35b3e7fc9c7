"""``initialize`` sent first is answered before the event loop loads, with the answer the
connection gives, from the Muse remembered of an earlier start; anything else is left to the
connection, and a stop signal while it waits stops the agent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from .harness import make_world, remember_muse

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
WAIT = 60.0

# Runs in a fresh interpreter, as `muse-acp serve` starts: the early answer on pipes, what it
# loaded of what loads after the answer (the event loop, the rest of the agent, the full ACP
# models, MCP servers, traces, in-memory pipes), then the answer the connection's initialize
# route gives to the same request.
_ANSWER_FIRST = """
import json, os, sys
from muse_acp.agent.handshake.early import answer_first
from muse_acp.config import load_config

config = load_config(os.environ)
frames = [line.encode() + b"\\n" for line in sys.argv[1:]]
read_in, write_in = os.pipe()
read_out, write_out = os.pipe()
os.write(write_in, b"".join(frames))
opening = answer_first(config, read_in, write_out)
later = ("asyncio", "anyio._backends._asyncio", "muse_acp.rpc.memory", "muse_acp_wire.acp",
         "muse_acp.agent.mcp", "muse_acp.traces", "muse_acp.agent.routes")
loaded = sorted(m for m in sys.modules if m in later or m.startswith(tuple(f"{n}." for n in later)))
os.close(write_out)
written = os.read(read_out, 1 << 20)

import anyio
from muse_acp.agent.handshake.capabilities import InitializeParams
from muse_acp.agent.handshake.startup import Startup, answer_initialize
from muse_acp.rpc import encode_result, validate_params

async def connection_answer():
    request = json.loads(frames[0])
    params = validate_params(InitializeParams, request["params"], "initialize")
    result = await answer_initialize(Startup(config), params)
    return encode_result(request["id"], result) + b"\\n"

print(json.dumps({
    "loaded": loaded,
    "written": written.decode(),
    "connection": anyio.run(connection_answer).decode() if opening.answered else None,
    "unread": opening.unread.decode(),
    "answered": opening.answered is not None,
}))
"""

OPT_INS = {
    "_meta": {"muse/output": 1, "muse/asyncTasks": 1, "steering": True},
    "elicitation": {"form": {}},
    "auth": {"terminal": True},
}


def _answer_first(env: dict[str, str], *frames: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _ANSWER_FIRST, *(json.dumps(frame) for frame in frames)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("version", VERSIONS)
def test_initialize_first_is_answered_as_the_connection_would_before_the_loop_loads(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    anyio.run(remember_muse, world)
    initialize = {
        "jsonrpc": "2.0",
        "id": "init-1",
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": OPT_INS},
    }
    following = {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}
    seen = _answer_first(world.env(), initialize, following)
    assert seen["loaded"] == []
    assert seen["answered"]
    assert seen["written"] == seen["connection"]
    answer = json.loads(seen["written"])
    assert answer["id"] == "init-1"
    # What the remembered Muse decided is in the answer: its backend, named.
    assert answer["result"]["_meta"]["muse/backend"]["backend"] == "msp"
    assert version in answer["result"]["_meta"]["muse/backend"]["reason"]
    # What followed in the same read is the connection's, untouched.
    assert seen["unread"] == json.dumps(following) + "\n"


@pytest.mark.parametrize(
    "first",
    [
        {"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {}},
        # Refused by the extension schema: the connection answers it with its error.
        {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {"_meta": {"muse/output": 0}}},
        },
        {"jsonrpc": "2.0", "id": True, "method": "initialize", "params": {"protocolVersion": 1}},
    ],
)
def test_any_other_first_frame_is_left_to_the_connection(
    tmp_path: Path, first: dict[str, Any]
) -> None:
    world = make_world(tmp_path)
    seen = _answer_first(world.env(), first)
    assert seen["written"] == ""
    assert not seen["answered"]
    assert seen["unread"] == json.dumps(first) + "\n"


_STOPPED_WAITING = """
import os, signal, threading
from muse_acp.agent.handshake.early import answer_first
from muse_acp.config import load_config

read_in, write_in = os.pipe()
pause = threading.Event()

def stop_when_caught():
    # The signal goes once answer_first has taken it over, as a client's would while the
    # agent waits for its first frame.
    while signal.getsignal(signal.SIG{name}) in (
        signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler
    ):
        pause.wait(0.001)
    os.kill(os.getpid(), signal.SIG{name})

threading.Thread(target=stop_when_caught, daemon=True).start()
opening = answer_first(load_config({{}}), read_in, 1)
restored = signal.getsignal(signal.SIG{name}) in (signal.SIG_DFL, signal.default_int_handler)
print(opening is None, restored)
"""


@pytest.mark.parametrize("name", ["TERM", "HUP", "INT"])
def test_a_stop_signal_while_waiting_for_the_first_frame_stops_before_serving(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _STOPPED_WAITING.format(name=name)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert (done.returncode, done.stdout.split(), done.stderr) == (0, ["True", "True"], "")


_PARTIAL = """
import json, os
from muse_acp.agent.handshake.early import answer_first
from muse_acp.config import load_config

read_in, write_in = os.pipe()
os.set_blocking(read_in, False)
os.write(write_in, b'{"jsonrpc":"2.0","id":1,"method":"initia')
opening = answer_first(load_config({}), read_in, 1)
print(json.dumps([opening.unread.decode(), opening.ended, opening.answered is None]))
"""


def test_what_a_non_blocking_input_held_so_far_is_left_to_the_connection() -> None:
    # The rest of the frame has not come yet: the connection reads it, after what was read.
    done = subprocess.run(
        [sys.executable, "-c", _PARTIAL],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    assert json.loads(done.stdout) == ['{"jsonrpc":"2.0","id":1,"method":"initia', False, True]
