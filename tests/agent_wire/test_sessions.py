"""Session lifecycle over the wire: load replays history, list, resume, fork, close."""

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
from muse_acp.sim.options.versions import HOST_VERSIONS
from muse_acp.sim.state.store import SessionMeta, Store
from muse_acp_wire import msp

from .harness import WAIT, World, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio


async def test_load_replays_the_whole_history_after_a_restart(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "first words")
            await agent.prompt(session, "sim:search needle\nsim:plan")
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        kinds = agent.client.kinds(session)
        user_text = agent.client.text(session, "user_message_chunk")
        assert "first words" in user_text
        assert "sim:search needle" in user_text
        assert "first words" in agent.client.text(session)
        assert kinds.index("user_message_chunk") < kinds.index("agent_message_chunk")
        cards = [
            u for s, u in agent.client.updates if s == session and u.session_update == "tool_call"
        ]
        assert [(c.kind, c.title) for c in cards] == [("search", "needle")]
        assert "plan" in kinds
        assert "session_info_update" in kinds
        assert world.host_requests("turn/start") == world.host_requests("turn/start")[:2]
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "after the restart")
        assert response.stop_reason == "end_turn"
    starts = world.host_requests("turn/start")
    assert len(starts) == 3
    assert {f["params"]["sessionId"] for f in starts} == {session}


async def test_list_shows_sessions_of_the_workspace_with_titles(world: World) -> None:
    async with running_agent(world) as agent:
        first = await agent.new_session()
        second = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(first, "alpha prompt")
            await agent.prompt(second, "beta prompt")
            listed = await agent.conn.list_sessions(cwd=str(world.workspace))
    rows = {row.session_id: row for row in listed.sessions}
    for frame in world.host_requests():
        assert None not in frame.get("params", {}).values(), f"explicit null sent: {frame}"
    assert set(rows) >= {first, second}
    assert rows[first].cwd == str(world.workspace)
    assert rows[first].title is not None


async def test_resume_brings_a_session_back_without_replay(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "remember this")
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.resume_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            response = await agent.prompt(session, "and continue")
        assert "user_message_chunk" not in agent.client.kinds(session)
        assert response.stop_reason == "end_turn"


async def test_close_then_prompt_is_not_found_until_loaded_again(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "before closing")
            await agent.conn.close_session(session_id=session)
        with pytest.raises(acp.RequestError) as raised:
            await agent.prompt(session, "after closing")
        assert raised.value.code == -32002
        assert "load" in str(raised.value)
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            response = await agent.prompt(session, "after loading")
        assert response.stop_reason == "end_turn"


async def test_fork_creates_a_new_session_that_can_prompt(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "original")
            forked = await agent.conn.fork_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            assert forked.session_id != session
            response = await agent.prompt(forked.session_id, "in the fork")
        assert response.stop_reason == "end_turn"


async def test_unknown_session_load_is_not_found(world: World) -> None:
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            with pytest.raises(acp.RequestError) as raised:
                await agent.conn.load_session(
                    session_id="01a00000-0000-7000-8000-000000000001",
                    cwd=str(world.workspace),
                    mcp_servers=[],
                )
    assert raised.value.code == -32002


async def test_session_ids_that_could_escape_a_directory_are_refused(world: World) -> None:
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            with pytest.raises(acp.RequestError) as raised:
                await agent.conn.load_session(
                    session_id="../../etc/passwd", cwd=str(world.workspace), mcp_servers=[]
                )
    assert raised.value.code == -32602


async def test_new_session_refuses_relative_missing_and_extra_directories(world: World) -> None:
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            for cwd in ("relative/path", str(world.root / "missing")):
                with pytest.raises(acp.RequestError) as raised:
                    await agent.conn.new_session(cwd=cwd, mcp_servers=[])
                assert raised.value.code == -32602
            with pytest.raises(acp.RequestError) as raised:
                await agent.conn.new_session(
                    cwd=str(world.workspace),
                    mcp_servers=[],
                    additional_directories=[str(world.root)],
                )
            assert raised.value.code == -32602


async def test_settings_cannot_change_during_a_turn(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, session, "sim:plan\nsim:hold")
            await agent.client.wait_for(session, "plan")
            with pytest.raises(acp.RequestError) as raised:
                await agent.conn.set_session_mode(session_id=session, mode_id="readOnly")
            assert raised.value.code == -32600
            await agent.conn.cancel(session_id=session)


async def test_read_only_mode_restarts_the_host_without_shell_access(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:bash 100")
            await agent.conn.set_session_mode(session_id=session, mode_id="readOnly")
            await agent.prompt(session, "sim:bash 100")
        cards = [
            u
            for s, u in agent.client.updates
            if s == session and u.session_update == "tool_call_update" and u.status
        ]
        assert [c.status for c in cards][-1] == "failed"
        assert "completed" in [c.status for c in cards]
        modes = [
            u.current_mode_id
            for s, u in agent.client.updates
            if s == session and u.session_update == "current_mode_update"
        ]
        assert modes == ["readOnly"]


async def test_config_options_answer_the_full_list(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.conn.set_config_option(
                session_id=session, config_id="reasoningEffort", value="high"
            )
            with pytest.raises(acp.RequestError) as raised:
                await agent.conn.set_config_option(
                    session_id=session, config_id="reasoningEffort", value="enormous"
                )
            await agent.prompt(session, "with high effort")
    ids = [option.id for option in response.config_options]
    safety = ["sandbox", "sandboxNetwork", "workspaceWrite", "shell", "approvalPolicy"]
    assert ids == ["mode", "model", "reasoningEffort", *safety]
    assert raised.value.code == -32602
    [start] = world.host_requests("turn/start")
    assert start["params"]["reasoningEffort"] == "high"


async def test_a_session_held_by_another_host_process_fails_before_anything_is_submitted(
    world: World,
) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
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
                await agent.conn.load_session(
                    session_id=session, cwd=str(world.workspace), mcp_servers=[]
                )
                with pytest.raises(acp.RequestError) as raised:
                    await agent.prompt(session, "while another process holds it")
    error = raised.value
    assert "session/resume" in str(error)
    assert "session/start" not in str(error)
    failure = failure_of(error)
    assert failure["kind"] == "sessionInUse"
    assert (failure["phase"], failure["execution"]) == ("starting", "notSubmitted")
    assert failure["retryable"] is True
    assert len(world.host_requests("turn/start")) == 1


async def test_paging_many_stored_sessions_starts_one_host_in_all(world: World) -> None:
    store = Store(world.sim_home)
    for index in range(230):
        session_id = new_uuid7()
        stamp = f"2026-11-30T10:{index // 60:02d}:{index % 60:02d}Z"
        lease = store.create(
            SessionMeta(
                session_id=session_id,
                created_at=stamp,
                updated_at=stamp,
                workspace_root=str(world.workspace),
                provider_id=None,
                model_id=None,
                approval_mode="promptUnmatched",
                first_user_prompt=f"seeded session {index}",
            )
        )
        assert lease is not None
        lease.release()
    seen: list[str] = []
    async with running_agent(world) as agent:
        cursor: str | None = None
        with anyio.fail_after(WAIT):
            while True:
                page = await agent.conn.list_sessions(cwd=str(world.workspace), cursor=cursor)
                seen += [entry.session_id for entry in page.sessions]
                cursor = page.next_cursor
                if not cursor:
                    break
    assert len(seen) == len(set(seen)) == 230
    assert len(world.host_requests("session/list")) == 5
    assert len(world.host_requests("initialize")) == 1, "every page came from the kept host"


def _fork_meta(**boundary: str) -> dict[str, Any]:
    return {"muse/fork": boundary}


async def test_a_fork_starts_in_the_default_mode_and_says_where_it_came_from(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.conn.set_session_mode(session_id=session, mode_id="readOnly")
            await agent.prompt(session, "original")
            forked = await agent.conn.fork_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
    assert forked.modes is not None
    assert forked.modes.current_mode_id == "default"
    assert forked.field_meta is not None
    provenance = forked.field_meta["muse/fork"]
    assert provenance["sourceSessionId"] == session
    assert provenance["explicitBoundary"] is False
    assert provenance["cutCursor"]


async def test_a_fork_honours_an_explicit_boundary_and_refuses_a_bad_one(world: World) -> None:
    steering = schema.ClientCapabilities(field_meta={"muse/steering": 1})
    async with running_agent(world, capabilities=steering) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "first turn")
            await agent.prompt(session, "second turn")
            turns = [
                u.field_meta["muse/activeTurnId"]
                for s, u in agent.client.updates
                if s == session
                and u.session_update == "session_info_update"
                and u.field_meta
                and u.field_meta.get("muse/activeTurnId")
            ]
            forked = await agent.conn.fork_session(
                session_id=session,
                cwd=str(world.workspace),
                mcp_servers=[],
                **_fork_meta(lastTurnId=turns[0]),
            )
            with pytest.raises(acp.RequestError) as refused:
                await agent.conn.fork_session(
                    session_id=session,
                    cwd=str(world.workspace),
                    mcp_servers=[],
                    **_fork_meta(lastTurnId="no-such-turn"),
                )
            await agent.conn.load_session(
                session_id=forked.session_id, cwd=str(world.workspace), mcp_servers=[]
            )
        replayed = agent.client.text(forked.session_id, "user_message_chunk")
    assert forked.field_meta is not None
    assert forked.field_meta["muse/fork"]["explicitBoundary"] is True
    assert "first turn" in replayed
    assert "second turn" not in replayed
    assert refused.value.code == -32602
    assert "not a completed turn" in str(refused.value)


@pytest.mark.parametrize("version", tuple(HOST_VERSIONS))
async def test_a_load_shows_each_event_whatever_its_source_range_holds(
    tmp_path: Path, version: str
) -> None:
    # muse-acp never reads an event's sourceRange: one of a shape Muse does not declare costs
    # the event nothing, and one that is no object at all costs that event alone, not the load.
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "first words")
            await agent.prompt(session, "second words")
        answers = agent.client.text(session)
    log = Store(world.sim_home).log(session)
    events = [json.loads(line) for line in log.lines()]
    users = [
        e["params"] for e in events if e["params"].get("item", {}).get("kind") == "userMessage"
    ]
    users[0]["sourceRange"] = {"stream": 7, "first": None}
    users[1]["sourceRange"] = "records 4 to 6"
    log.path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in events))
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        replayed = agent.client.text(session, "user_message_chunk")
        replayed_answers = agent.client.text(session)
    assert "first words" in replayed
    assert "second words" not in replayed
    assert answers
    assert replayed_answers == answers
