"""The agent child process: its stderr is always read, its end is reported, it is reaped."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator

import anyio
import pytest

from muse_acp.client import AgentExited, connect, message_text
from muse_acp.rpc import ConnectionClosed
from muse_acp_wire import acp

from .fake_agent import WAIT

pytestmark = pytest.mark.anyio


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_an_agent_that_exits_at_once_is_reported_with_its_status_and_last_words() -> None:
    lines: list[str] = []
    code = "import sys; print('config missing:', 'MUSE', file=sys.stderr); sys.exit(3)"
    with anyio.fail_after(WAIT), pytest.raises(AgentExited) as caught:
        async with connect(python(code), on_stderr=lines.append):
            pass
    assert isinstance(caught.value, ConnectionClosed)
    assert caught.value.returncode == 3
    assert caught.value.stderr_lines == ("config missing: MUSE",)
    assert lines == ["config missing: MUSE"]
    assert "config missing: MUSE" in "".join(caught.value.__notes__)


async def test_a_silent_agent_times_out_and_is_reaped() -> None:
    lines: list[str] = []
    code = "import os, sys; print(os.getpid(), file=sys.stderr, flush=True); sys.stdin.read()"
    with anyio.fail_after(WAIT), pytest.raises(TimeoutError):
        async with connect(python(code), on_stderr=lines.append, startup_timeout=0.5):
            pass
    assert len(lines) == 1
    assert not is_running(int(lines[0]))


async def test_a_cancelled_connection_still_reaps_its_agent() -> None:
    lines: list[str] = []
    started = anyio.Event()

    def on_stderr(line: str) -> None:
        lines.append(line)
        started.set()

    code = "import os, sys; print(os.getpid(), file=sys.stderr, flush=True); sys.stdin.read()"
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:

            async def open_forever() -> None:
                async with connect(python(code), on_stderr=on_stderr):
                    pass

            tasks.start_soon(open_forever)
            await started.wait()
            tasks.cancel_scope.cancel()
    assert not is_running(int(lines[0]))


async def test_long_stderr_lines_are_cut_and_only_the_last_lines_are_kept() -> None:
    lines: list[str] = []
    code = (
        "import sys\n"
        "for i in range(100): print('line', i, file=sys.stderr)\n"
        "print('x' * 10000, file=sys.stderr)\n"
        "sys.exit(1)"
    )
    with anyio.fail_after(WAIT), pytest.raises(AgentExited) as caught:
        async with connect(python(code), on_stderr=lines.append):
            pass
    kept = caught.value.stderr_lines
    assert len(lines) == 101
    assert len(kept) == 40
    assert kept[0] == "line 61"
    assert kept[-1] == "x" * 2000


DYING_AGENT = """
import json, sys
def answer(result):
    request = json.loads(sys.stdin.readline())
    print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
    return request
answer({"protocolVersion": 1})
answer({"sessionId": "s-1"})
chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "thinking"}}
request = json.loads(sys.stdin.readline())
update = {"sessionId": "s-1", "update": chunk}
print(json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": update}), flush=True)
print("fatal: the model ran out of memory", file=sys.stderr, flush=True)
sys.exit(7)
"""


async def test_an_agent_dying_mid_prompt_ends_the_prompt_with_its_status_and_last_words() -> None:
    received: list[str | None] = []
    with anyio.fail_after(WAIT):
        async with connect(python(DYING_AGENT), on_stderr=lambda line: None) as agent:
            session = await agent.new_session("/workspace")
            with pytest.raises(AgentExited) as caught:
                await collect_text(session.prompt("go"), received)
    assert received == ["thinking"]
    assert caught.value.returncode == 7
    assert caught.value.stderr_lines == ("fatal: the model ran out of memory",)


async def collect_text(updates: AsyncIterator[acp.SessionUpdate], into: list[str | None]) -> None:
    async for update in updates:
        into.append(message_text(update))
