"""Extra workspace folders (ACP ``additionalDirectories``) on every Muse version: advertised and
given to Muse as ``workspaceRoots`` where it takes several (1.4.2 on), kept as the session's own
across a restart, and refused clearly, naming the Muse version, where it does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from acp import RequestError

from .harness import WAIT, Agent, failure_of, make_world, running_agent
from .test_deletion import initialize_result
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

TAKES_ROOTS: Final = frozenset({"1.4.2", "1.4.4", "1.4.13"})


async def _roots(agent: Agent, session: str) -> str:
    """The workspace roots the simulated model names for ``session``."""
    before = len(agent.client.text(session))
    with anyio.fail_after(WAIT):
        await agent.prompt(session, "sim:roots")
    return agent.client.text(session)[before:]


async def _listed(agent: Agent, session: str) -> list[str] | None:
    with anyio.fail_after(WAIT):
        listed = await agent.conn.list_sessions(cwd=str(agent.world.workspace))
    (entry,) = [s for s in listed.sessions if s.session_id == session]
    return entry.additional_directories


def _folders(root: Path) -> tuple[str, str]:
    first, second = root / "lib-a", root / "lib-b"
    first.mkdir()
    second.mkdir()
    return str(first), str(second)


@pytest.mark.parametrize("version", VERSIONS)
async def test_additional_directories_reach_muse_as_its_roots_or_are_refused_naming_the_version(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    first, second = _folders(world.root)
    ws = str(world.workspace)
    async with running_agent(world) as agent:
        advertised = initialize_result(agent)["agentCapabilities"]["sessionCapabilities"]
        assert ("additionalDirectories" in advertised) == (version in TAKES_ROOTS)
        if version not in TAKES_ROOTS:
            await _refused_everywhere(agent, version, [first])
            return
        with anyio.fail_after(WAIT):
            made = await agent.conn.new_session(
                cwd=ws, mcp_servers=[], additional_directories=[first, second, ws, first]
            )
        session = made.session_id
        assert await _roots(agent, session) == f"[workspace roots: {ws}, {first}, {second}]"
        assert await _listed(agent, session) == [first, second]
        with anyio.fail_after(WAIT):
            forked = await agent.conn.fork_session(
                session_id=session, cwd=ws, mcp_servers=[], additional_directories=[second]
            )
        assert await _roots(agent, forked.session_id) == f"[workspace roots: {ws}, {second}]"
        assert await _listed(agent, session) == [first, second], "the source keeps its own"

    # After a restart the session's folders are still its own: listed, and given to the new
    # host (which knows only the primary root) when the client loads the session with them.
    async with running_agent(world) as agent:
        assert await _listed(agent, session) == [first, second]
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=ws, mcp_servers=[], additional_directories=[first, second]
            )
        assert await _roots(agent, session) == f"[workspace roots: {ws}, {first}, {second}]"
        # A resume naming fewer folders makes them the session's, on the running host too.
        with anyio.fail_after(WAIT):
            await agent.conn.resume_session(
                session_id=session, cwd=ws, mcp_servers=[], additional_directories=[second]
            )
        assert await _roots(agent, session) == f"[workspace roots: {ws}, {second}]"
        assert await _listed(agent, session) == [second]
        with anyio.fail_after(WAIT):
            await agent.conn.resume_session(session_id=session, cwd=ws, mcp_servers=[])
        assert await _roots(agent, session) == f"[workspace roots: {ws}]"
        assert await _listed(agent, session) is None


async def _refused_everywhere(agent: Agent, version: str, extra: list[str]) -> None:
    """On a Muse serving one folder per session, each lifecycle request naming more is refused
    before anything changes, saying which Muse it is and what to do."""
    ws = str(agent.world.workspace)
    refusals: list[RequestError] = []
    with anyio.fail_after(WAIT):
        with pytest.raises(RequestError) as new:
            await agent.conn.new_session(cwd=ws, mcp_servers=[], additional_directories=extra)
        refusals.append(new.value)
        session = await agent.new_session()
        await agent.prompt(session, "hello")
        calls: list[Any] = [
            agent.conn.load_session,
            agent.conn.resume_session,
            agent.conn.fork_session,
        ]
        for call in calls:
            with pytest.raises(RequestError) as refused:
                await call(session_id=session, cwd=ws, mcp_servers=[], additional_directories=extra)
            refusals.append(refused.value)
        listed = await agent.conn.list_sessions(cwd=ws)
    assert [s.session_id for s in listed.sessions] == [session], "nothing was opened or forked"
    for error in refusals:
        assert error.code == -32602
        assert f"Muse {version} serves one workspace folder per session" in str(error)
        assert "update Muse to 1.4.2 or newer" in str(error)
        assert failure_of(error)["source"] == "host"
    assert await _roots(agent, session) == f"[workspace roots: {ws}]"
