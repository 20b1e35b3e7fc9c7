"""What muse-acp does on Muse 1.4.4 (the stable channel) where 1.4.4 differs from what its
declarations suggest, on every version muse-sim plays: ``session/delete`` is advertised and
served only where Muse has it (refused up front elsewhere, nothing hidden or reported deleted),
and a fork cut after an earlier turn works where Muse can make one and is refused up front,
saying what to do instead, on 1.4.4. The features 1.4.4 declares (goals, task control, plan
usage, the Plan skill, the approval policy) are covered on 1.4.4 by the tests of each feature.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from muse_acp.sim.state.store import Store

from .harness import WAIT, Agent, failure_of, make_world, running_agent
from .test_deletion import delete, initialize_result, listed
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

NO_DELETE = ("1.1.1", "1.2.1", "1.3.0", "1.4.4", "1.4.13")
"""Versions without Muse's session/delete (it exists in 1.4.1 and 1.4.2 only)."""
NO_EARLIER_FORK = ("1.4.4",)
"""Versions that fail a fork cut after an earlier turn (1.4.3 and 1.4.4)."""


@pytest.mark.parametrize("version", VERSIONS)
async def test_delete_is_advertised_only_where_muse_has_it_and_refused_clearly_elsewhere(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        capabilities = initialize_result(agent)["agentCapabilities"]["sessionCapabilities"]
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "keep me")
        if version in NO_DELETE:
            with pytest.raises(acp.RequestError) as refused:
                await delete(agent, session)
            assert session in await listed(agent)
        else:
            await delete(agent, session)
            assert session not in await listed(agent)
    if version in NO_DELETE:
        assert "delete" not in capabilities
        assert refused.value.code == -32601
        assert failure_of(refused.value)["source"] == "host"
        assert "cannot delete sessions" in str(refused.value)
        assert "nothing was deleted" in str(refused.value)
        assert Store(world.sim_home).read_meta(session) is not None
        assert world.host_requests("session/delete") == []
    else:
        assert capabilities["delete"] == {}


def _turn_ids(agent: Agent, session: str) -> list[str]:
    return [
        u.field_meta["muse/activeTurnId"]
        for s, u in agent.client.updates
        if s == session
        and u.session_update == "session_info_update"
        and u.field_meta
        and u.field_meta.get("muse/activeTurnId")
    ]


async def _fork(agent: Agent, session: str, **boundary: str) -> Any:
    meta: dict[str, Any] = {"muse/fork": boundary} if boundary else {}
    with anyio.fail_after(WAIT):
        return await agent.conn.fork_session(
            session_id=session, cwd=str(agent.world.workspace), mcp_servers=[], **meta
        )


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_fork_after_an_earlier_turn_works_or_is_refused_up_front_saying_what_to_do(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    steering = acp.schema.ClientCapabilities(field_meta={"muse/steering": 1})
    async with running_agent(world, capabilities=steering) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "first turn")
            await agent.prompt(session, "second turn")
        first = _turn_ids(agent, session)[0]
        if version in NO_EARLIER_FORK:
            with pytest.raises(acp.RequestError) as refused:
                await _fork(agent, session, lastTurnId=first)
            whole = await _fork(agent, session)
        else:
            earlier = await _fork(agent, session, lastTurnId=first)
    if version in NO_EARLIER_FORK:
        assert refused.value.code == -32602
        assert failure_of(refused.value)["source"] == "host"
        message = str(refused.value)
        assert "no fork was made" in message
        assert "Fork without choosing a turn" in message
        # Refused before Muse was asked: the one fork Muse saw is the whole-session one.
        forks = world.host_requests("session/fork")
        assert [f["params"].get("cutPoint") for f in forks] == [None]
        assert whole.field_meta["muse/fork"]["explicitBoundary"] is False
    else:
        assert earlier.field_meta["muse/fork"]["explicitBoundary"] is True
