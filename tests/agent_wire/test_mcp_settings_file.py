"""The user's Muse settings file, read for a settings overlay (Muse 1.1.1 and 1.2.1 take the
editor's MCP servers that way), never stalls the agent: a FIFO planted at its path fails the
session's prompt clearly, and the agent answers other requests all the while."""

from __future__ import annotations

import os
from pathlib import Path

import acp
import anyio
import pytest

from .harness import WAIT, make_world, running_agent
from .test_mcp_servers import _servers

pytestmark = pytest.mark.anyio

OVERLAY_VERSIONS = ("1.1.1", "1.2.1")
"""The versions that get a stdio and an http server through the overlay, so the user's file
is read (1.3.0 takes no http server at all, 1.4.2 takes both natively)."""


@pytest.mark.parametrize("version", OVERLAY_VERSIONS)
async def test_a_fifo_for_a_settings_file_fails_the_prompt_and_stalls_nothing(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    # The user's config home by the XDG rule's fallback, $HOME/.config: muse-sim reads settings
    # only from an XDG_CONFIG_HOME it is given, so the hosts serving the other requests never
    # open the FIFO themselves.
    world.extra_env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME="")
    settings = tmp_path / "home" / ".config" / "muse" / "settings.json"
    settings.parent.mkdir(parents=True)
    os.mkfifo(settings)  # a blocking open waits for a writer that never comes
    failures: list[acp.RequestError] = []
    async with running_agent(world) as agent:
        cwd = str(world.workspace)
        servers = _servers(http=True)
        session = (await agent.conn.new_session(cwd=cwd, mcp_servers=servers)).session_id

        async def prompt() -> None:
            try:
                await agent.prompt(session, "hello")
            except acp.RequestError as error:
                failures.append(error)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(prompt)
                others = [(await agent.conn.new_session(cwd=cwd, mcp_servers=[])) for _ in "ab"]
                await agent.conn.set_session_mode(session_id=others[0].session_id, mode_id="plan")
                await agent.conn.list_sessions(cwd=cwd)
    [failure] = failures
    assert "is not a regular file" in str(failure), failure
    assert str(settings) in str(failure)
    assert world.host_requests("session/start") == [], "no host got the session"
