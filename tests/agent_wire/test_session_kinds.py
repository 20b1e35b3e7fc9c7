"""Subagents' own sessions in the session list, on every Muse version: from 1.4.4 Muse lists a
subagent's session as a row of its own (``kind`` ``subagent``, its ``parentSessionId``) beside
the root session it belongs to; muse-acp's ``session/list`` shows the root session only, the
subagent being reached by its parent's card, while ``session/load`` of the subagent's Muse
session id still replays it. Older hosts leave the subagent's session out."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from tests.sim.harness import sim_served

from .harness import WAIT, World, make_world, running_agent
from .test_child_sessions import SUBAGENTS, _announced
from .test_child_tool_calls import PROMPT
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

KINDS: Final = ("1.4.4", "1.4.13")
"""Muse versions whose session rows say their kind and list subagents' sessions."""


async def _host_rows(world: World) -> list[dict[str, Any]]:
    """The rows Muse itself lists for the world's workspace, asked directly of a host of the
    world's version over the same stored sessions."""
    async with sim_served(world.sim_home, world.version) as host:
        await host.initialize()
        result = await host.call("session/list", {"workspaceRoot": str(world.workspace)})
    rows: list[dict[str, Any]] = result["sessions"]
    return rows


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_list_shows_the_parent_not_its_subagents_own_session(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=SUBAGENTS) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, PROMPT)
        [child] = _announced(agent, session)
        listed = await agent.conn.list_sessions(cwd=str(world.workspace))
        rows = await _host_rows(world)
        by_id = {row["sessionId"]: row for row in rows}
        muse_child = next((sid for sid in by_id if sid != session), None)
        if muse_child is not None:  # still loads alone, given by its Muse id, as before
            await agent.conn.load_session(
                cwd=str(world.workspace), session_id=muse_child, mcp_servers=[]
            )
            replayed = agent.client.text(muse_child)
    assert [s.session_id for s in listed.sessions] == [session]
    assert child not in {s.session_id for s in listed.sessions}
    if version in KINDS:  # Muse's own list holds the subagent's session beside its parent
        assert muse_child is not None
        assert by_id[session]["kind"] == "root"
        assert by_id[muse_child]["kind"] == "subagent"
        assert by_id[muse_child]["parentSessionId"] == session
        assert "parentSessionId" not in by_id[session]
        assert replayed.endswith("make lint: approved")
    else:  # no row member says whose subagent a session is: Muse lists the parent alone
        assert list(by_id) == [session]
        assert "kind" not in by_id[session]
