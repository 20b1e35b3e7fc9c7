"""However the agent is stopped mid-turn, it stops in order and leaves nothing behind.

Editors end an agent by closing its stdin, or with SIGTERM (most), SIGHUP (a closed terminal)
or SIGINT (Ctrl-C). Each must cancel every turn, close every host, kill their process groups
and reap them, with nothing alarming in the log. The claims are about processes, so the agent
and its hosts run as processes; each stop meets one agent with a turn in every state at once.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Final

import anyio
import pytest

from .faults_harness import MARGIN, Budgets, FaultWorld, fault_world, wait_until
from .procs import children, is_running, require_proc
from .rawagent import raw_agent

pytestmark = pytest.mark.anyio

BUDGETS: Final = Budgets(startup=8.0, submit=2.0, cancel=1.0, read=5.0, idle=60.0)
STOPS: Final = {
    "end of stdin": None,
    "SIGTERM": signal.SIGTERM,
    "SIGHUP": signal.SIGHUP,
    "SIGINT": signal.SIGINT,
}
TURNS: Final = ("sim:hold", "sim:spawn 120", "sim:stream 20000")
"""A turn holding, one running a tool process, and one streaming (last: it ends by itself)."""


def _tool_pids(faulty: FaultWorld) -> list[int]:
    """The processes the hosts started themselves (a ``sim:spawn`` tool's ``sleep``)."""
    return [child for host in faulty.running() for child in children(host)]


def _turns_started(faulty: FaultWorld, count: int) -> Callable[[], bool]:
    """Whether the hosts received ``count`` turns."""
    return lambda: len(faulty.world.host_requests("turn/start")) == count


@pytest.mark.parametrize("stop", STOPS.values(), ids=STOPS.keys())
async def test_a_stopped_agent_leaves_no_process_and_no_traceback(
    tmp_path: Path, stop: int | None
) -> None:
    require_proc()
    faulty: FaultWorld = fault_world(tmp_path, BUDGETS, process=True)
    # The host leaves its tool process behind when it exits: only the agent's kill of the
    # host's process group can end it.
    faulty.world.extra_env["MUSE_SIM_QUIRKS"] = "orphan-tools"
    async with raw_agent(faulty.world, BUDGETS.env(), process=True) as agent:
        await agent.initialize()
        for number, prompt in enumerate(TURNS, 1):
            session = await agent.new_session()  # each its own host
            params = {"sessionId": session, "prompt": [{"type": "text", "text": prompt}]}
            await agent.start_request("session/prompt", params)
            await agent.wait_until(_turns_started(faulty, number), prompt)
            if prompt.startswith("sim:spawn"):
                # The agent writes nothing between the tool's card and its end (a client
                # without terminals sees the output at the end), so its frames cannot wake
                # this wait: /proc is watched instead.
                await wait_until(
                    lambda: bool(_tool_pids(faulty)),
                    BUDGETS.startup + MARGIN,
                    lambda: f"no tool process under the hosts {faulty.running()}",
                )
        tools = _tool_pids(faulty)
        assert len(faulty.running()) >= len(TURNS), "a host serves each turn"
        if stop is None:
            assert agent.process.stdin is not None
            await agent.process.stdin.aclose()
        else:
            os.kill(agent.process.pid, stop)
        with anyio.fail_after(BUDGETS.startup + MARGIN):
            await agent.process.wait()
        await faulty.all_exited(MARGIN)
        await wait_until(
            lambda: not [pid for pid in tools if is_running(pid)],
            MARGIN,
            lambda: f"tool processes still running: {tools}",
        )
    log = faulty.world.stderr_text()
    assert "Traceback" not in log, log[-3000:]
    assert agent.process.returncode is not None
