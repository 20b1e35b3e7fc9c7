"""``session/delete`` over the wire, on the Muse versions that have it: the session leaves Muse's
store, ``session/list`` and muse-acp's records for good, and nothing is deleted when the session
is busy here, held elsewhere or unknown. Every other version refuses it up front
(``test_stable_1_4_4``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from muse_acp.host.client import open_host
from muse_acp.ids import new_uuid7
from muse_acp.sim.state.store import Store
from muse_acp_wire import msp

from .harness import WAIT, Agent, World, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.4.2",)
"""The versions muse-sim plays whose Muse has ``session/delete`` (1.4.1 and 1.4.2)."""


async def delete(agent: Agent, session_id: str) -> schema.DeleteSessionResponse:
    """Send ``session/delete`` (the SDK's connection has no method for it yet), bounded."""
    with anyio.fail_after(WAIT):
        result = await agent.conn._conn.send_request("session/delete", {"sessionId": session_id})
    return schema.DeleteSessionResponse.model_validate(result or {})


async def refused(agent: Agent, session_id: str) -> acp.RequestError:
    with pytest.raises(acp.RequestError) as raised:
        await delete(agent, session_id)
    return raised.value


async def listed(agent: Agent) -> set[str]:
    with anyio.fail_after(WAIT):
        page = await agent.conn.list_sessions(cwd=str(agent.world.workspace))
    return {row.session_id for row in page.sessions}


async def load_refused(agent: Agent, session_id: str) -> acp.RequestError:
    with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
        await agent.conn.load_session(
            session_id=session_id, cwd=str(agent.world.workspace), mcp_servers=[]
        )
    return raised.value


def initialize_result(agent: Agent) -> dict[str, Any]:
    result: dict[str, Any] = next(m for d, m in agent.frames if d == "in" and m.get("id") == 0)[
        "result"
    ]
    return result


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A Muse that has ``session/delete``."""
    return make_world(tmp_path, version=VERSIONS[-1])


def in_muse(world: World, session_id: str) -> bool:
    return Store(world.sim_home).read_meta(session_id) is not None


def preference_file(world: World, session_id: str) -> Path:
    return world.data_dir / "sessions" / f"{session_id}.json"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_deleted_session_leaves_the_list_for_good(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        capabilities = initialize_result(agent)["agentCapabilities"]["sessionCapabilities"]
        doomed = await agent.new_session()
        kept = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(doomed, "to be deleted")
            await agent.prompt(kept, "to be kept")
        assert {doomed, kept} <= await listed(agent)
        # The session is open here, its execution host holding Muse's lease: that host is
        # stopped first, so Muse can delete it.
        await delete(agent, doomed)
        assert await listed(agent) == {kept}
        assert (await load_refused(agent, doomed)).code == -32002
        with pytest.raises(acp.RequestError) as closed:
            await agent.prompt(doomed, "after the delete")
        assert closed.value.code == -32002
        with anyio.fail_after(WAIT):
            assert (await agent.prompt(kept, "still here")).stop_reason == "end_turn"
    async with running_agent(world) as agent:
        assert await listed(agent) == {kept}
        assert (await load_refused(agent, doomed)).code == -32002
    assert capabilities["delete"] == {}
    assert in_muse(world, kept)
    assert not in_muse(world, doomed)
    deletes = world.host_requests("session/delete")
    assert [f["params"]["sessionId"] for f in deletes] == [doomed]
    assert not preference_file(world, doomed).exists()


@pytest.mark.parametrize("version", VERSIONS)
async def test_preferences_are_gone_and_a_restart_does_not_bring_the_session_back(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        prompted = await agent.new_session()
        never_prompted = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(prompted, "/rename A title of my own")
            await agent.prompt(prompted, "some work")
            await agent.conn.set_session_mode(session_id=prompted, mode_id="readOnly")
        stored = json.loads(preference_file(world, prompted).read_text())
        assert stored["userTitle"]["text"] == "A title of my own"
        assert preference_file(world, never_prompted).exists()
    async with running_agent(world) as agent:
        await delete(agent, prompted)
        await delete(agent, never_prompted)
    assert not preference_file(world, prompted).exists()
    assert not preference_file(world, never_prompted).exists()
    async with running_agent(world) as agent:
        assert prompted not in await listed(agent)
        for session in (prompted, never_prompted):
            assert (await load_refused(agent, session)).code == -32002
            with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as resumed:
                await agent.conn.resume_session(
                    session_id=session, cwd=str(world.workspace), mcp_servers=[]
                )
            assert resumed.value.code == -32002
    assert not in_muse(world, never_prompted)


async def test_delete_is_refused_while_a_prompt_runs(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, session, "sim:plan\nsim:hold")
            await agent.client.wait_for(session, "plan")
            error = await refused(agent, session)
            await agent.conn.cancel(session_id=session)
        assert session in await listed(agent)
    assert error.code == -32600
    assert "busy with a prompt" in str(error)
    assert in_muse(world, session)
    assert preference_file(world, session).exists()


async def test_an_unknown_or_already_deleted_session_is_not_found(world: World) -> None:
    async with running_agent(world) as agent:
        unknown = await refused(agent, new_uuid7())
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "once")
        await delete(agent, session)
        again = await refused(agent, session)
        shape = await refused(agent, "../escape")
    assert unknown.code == again.code == -32002
    assert "session/list" in str(unknown)
    assert shape.code == -32602


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_session_another_process_holds_is_not_deleted(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "/rename Held elsewhere")
            await agent.prompt(session, "first words")
            await agent.conn.close_session(session_id=session)
        # Another process (another editor window, say) opens the same session in Muse.
        async with open_host(
            str(world.muse_bin), cwd=str(world.workspace), env=world.env(), startup_timeout=WAIT
        ) as holder:
            with anyio.fail_after(WAIT):
                await holder.call(
                    "session/resume",
                    msp.SessionResumeParams(
                        command_id=new_uuid7(), session_id=session, exclude_items=True
                    ),
                    msp.SessionHistoryResult,
                )
            error = await refused(agent, session)
        assert session in await listed(agent)
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
    failure = failure_of(error)
    assert (failure["kind"], failure["phase"], failure["retryable"]) == (
        "sessionInUse",
        "deleting",
        True,
    )
    assert "another Muse host process holds it" in str(error)
    assert "Nothing was deleted" in str(error)
    assert in_muse(world, session)
    assert json.loads(preference_file(world, session).read_text())["userTitle"]["text"] == (
        "Held elsewhere"
    )


async def test_a_deletion_muse_never_acknowledges_runs_out_of_time_and_deletes_nothing(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path, version="1.4.2")
    world.extra_env.update(MUSE_SIM_FAULTS="hang-ack:session/delete", MUSE_ACP_SUBMIT_TIMEOUT="3")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "some work")
        error = await refused(agent, session)
        assert session in await listed(agent)
    failure = failure_of(error)
    assert (failure["kind"], failure["phase"]) == ("deadlineExceeded", "deleting")
    assert "List the sessions" in str(error)
    assert in_muse(world, session)
    assert preference_file(world, session).exists()
