"""Stopping one subagent, and pausing and resuming whole workflows, on every Muse version: a
subagent's child session offers cancel where Muse has ``subagent/stop`` (1.3.0 on), and
``session/cancel`` on it stops that subagent alone while the parent's turn goes on; elsewhere it
offers none and the parent's user is told why, with nothing sent. ``/workflow pause`` and
``/workflow resume`` reach ``workflow/pause`` (1.4.4 on) and ``workflow/resume`` (bundles from
1.4.6 on) for the workflow the session runs, and name the Muse they need where it lacks them,
with nothing sent. One agent start per version."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from .harness import WAIT, Agent, make_world, running_agent
from .test_child_sessions import PROMPT, SUBAGENTS, _announced, _child_failed, _said
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

STOPS_SUBAGENTS: Final = ("1.3.0", "1.4.2", "1.4.4", "1.4.13")
"""Versions whose bundle declares ``subagent/stop`` (Muse's own 1.3.0 declarations have it)."""
PAUSES: Final = ("1.4.4", "1.4.13")
"""Versions whose bundle declares ``workflow/pause``."""
RESUMES: Final = ("1.4.13",)
"""Played versions whose bundle declares ``workflow/resume``."""
OBJECTIVE: Final = "survey the failing tests"


async def _stop_held_subagent(agent: Agent, session: str, version: str) -> dict[str, Any]:
    """Run a held subagent and cancel its child session; the parent prompt's stop reason and
    the child's announcements."""
    result: dict[str, Any] = {}
    done = anyio.Event()

    async def prompt() -> None:
        response = await agent.prompt(session, f"sim:subagent-hold {OBJECTIVE}")
        result["stop"] = response.stop_reason
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(prompt)
        await agent.client.wait_until(lambda: len(_announced(agent, session)) == 1)
        [child] = _announced(agent, session)
        result["child"], result["running"] = child, _announced(agent, session)[child]
        await agent.conn.cancel(session_id=child)
        if version not in STOPS_SUBAGENTS:
            await agent.client.wait_until(lambda: "did not stop" in agent.client.text(session))
            result["told"] = agent.client.text(session)
            await agent.conn.cancel(session_id=session)  # the whole prompt is all it can stop
        with anyio.fail_after(WAIT):
            await done.wait()
    result["ended"] = _announced(agent, session)[result["child"]]
    return result


@pytest.mark.parametrize("version", VERSIONS)
async def test_one_subagent_stops_and_workflows_pause_where_muse_can(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session = await agent.new_session()
        stopped = await _stop_held_subagent(agent, session, version)
        said = _said(agent, stopped["child"])
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "/workflow pause")
            idle = agent.client.text(session)
            await agent.prompt(session, PROMPT)
            await agent.client.wait_until(lambda: _child_failed(agent, session))
            await agent.prompt(session, "/workflow pause")
            await agent.prompt(session, "/workflow resume")
        replies = agent.client.text(session)
    [start] = world.host_requests("turn/start")[:1]
    assert stopped["child"].startswith(f"{session}~subagent~")
    assert stopped["running"]["state"] == {"state": "running"}
    if version in STOPS_SUBAGENTS:
        # Only the subagent stopped: the parent's turn went on to its end.
        assert stopped["running"]["capabilities"] == {"cancel": {}}
        assert stopped["stop"] == "end_turn"
        assert stopped["ended"]["state"] == {"state": "idle", "stopReason": "cancelled"}
        assert said[-1] == ("agent_message_chunk", f"stopped by its owner: {OBJECTIVE}")
        [stop] = world.host_requests("subagent/stop")
        assert stop["params"]["sessionId"] == session
        assert f"{session}~subagent~{stop['params']['subagentId']}" == stopped["child"]
        assert stop["params"]["reason"] == "cancelled from the ACP client"
        assert not world.host_requests("turn/cancel")
    else:
        assert stopped["running"]["capabilities"] == {}
        assert (
            f"this Muse ({version}) cannot stop one subagent on its own; Muse 1.3.0 and newer "
            "can, or stop the prompt" in stopped["told"]
        )
        assert stopped["stop"] == "cancelled"
        assert not world.host_requests("subagent/stop")
    if version in PAUSES:
        assert "none to pause" in idle
        [pause] = world.host_requests("workflow/pause")
        assert pause["params"]["sessionId"] == session
        assert "Muse is pausing 'Workflow: Triage issues'" in replies
    else:
        assert f"Muse can pause a workflow from 1.4.4 on, and this Muse is {version}" in idle
        assert not world.host_requests("workflow/pause")
    if version in RESUMES:
        assert "/workflow resume resumes it" in replies
        [resume] = world.host_requests("workflow/resume")
        assert resume["params"]["workflowRunId"] == pause["params"]["workflowRunId"]
        assert "Muse is resuming 'Workflow: Triage issues'" in replies
    else:
        assert "/workflow resume resumes it" not in replies
        if version in PAUSES:  # paused with no way back here: the reply says so
            assert "this Muse cannot resume a workflow (Muse 1.4.6 and newer can)" in replies
        assert f"Muse can resume a workflow from 1.4.6 on, and this Muse is {version}" in replies
        assert not world.host_requests("workflow/resume")
    assert start["params"]["sessionId"] == session
