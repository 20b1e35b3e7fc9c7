"""Every supported Muse version, end to end, and the edges real 1.3.0 and 1.4.2 hosts show.

A full session (new, a tool call, a three-stage approval with the 1.4.2 stage race, a question,
a cancel, list, load after a restart, stored output where it is enabled) runs against muse-sim
playing each version; the edge tests check that each real-host edge settles within its deadline
with the behaviour a user expects, on the versions where it occurs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from .harness import WAIT, World, ext_request, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
"""Every Muse version muse-sim plays and muse-acp supports."""
STORED_OUTPUT = {"1.2.1"}
"""Versions verified for stored output (``host.versions``); newer ones need the opt-in."""
FORMS = schema.ClientCapabilities(
    elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities()),
    field_meta={"muse/output": 1},
)


def _world(tmp_path: Path, version: str, **env: str) -> World:
    world = make_world(tmp_path, version=version)
    world.extra_env.update(env)
    return world


def _output_refs(updates: list[tuple[str, Any]], session: str) -> list[dict[str, Any]]:
    """The latest ``muse/output`` entry of each of the session's cards that has one."""
    latest: dict[str, dict[str, Any]] = {}
    for sid, update in updates:
        if (
            sid == session
            and update.session_update in ("tool_call", "tool_call_update")
            and update.field_meta
            and "muse/output" in update.field_meta
        ):
            latest[update.tool_call_id] = update.field_meta["muse/output"]
    return list(latest.values())


def _titled(updates: list[tuple[str, Any]], session: str) -> list[Any]:
    """The session's ``session_info_update``s that carry a title."""
    return [
        u
        for s, u in updates
        if s == session and u.session_update == "session_info_update" and u.title
    ]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_full_session_works_on_every_supported_version(
    tmp_path: Path, version: str
) -> None:
    world = _world(tmp_path, version)
    async with running_agent(world, capabilities=FORMS) as agent:
        agent.client.answer_elicitations = True
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            tool = await agent.prompt(session, "a tool call\nsim:bash 2000")
            staged = await agent.prompt(session, "sim:stagerace echo one && ls .; echo three")
            asked = await agent.prompt(session, "sim:ask")
        assert (tool.stop_reason, staged.stop_reason, asked.stop_reason) == ("end_turn",) * 3
        titles = [r.tool_call.title or "" for r in agent.client.permission_requests]
        # On 1.4.2 the host settles the second stage itself while the user decides it; the
        # stale decision makes the adapter read the approval back and ask the third.
        assert [t.split(":")[0] for t in titles] == ["Stage 1 of 3", "Stage 2 of 3", "Stage 3 of 3"]
        assert len(agent.client.elicitations) == 1
        assert len(world.host_requests("userInput/answer")) == 1

        outcomes: list[str] = []

        async def held() -> None:
            outcomes.append((await agent.prompt(session, "sim:plan\nsim:hold")).stop_reason)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(held)
                await agent.client.wait_for(session, "plan")
                await agent.conn.cancel(session_id=session)
        assert outcomes == ["cancelled"]

        refs = _output_refs(agent.client.updates, session)
        if version in STORED_OUTPUT:
            [ref] = [r for r in refs if r["byteLen"] == 2000]
            page = await ext_request(
                agent,
                "_muse/readOutput",
                {key: ref[key] for key in ("sessionId", "itemId", "outputRef")}
                | {"offsetBytes": 0, "lengthBytes": 4096},
            )
            assert page["byteLen"] == 2000
            assert page["eof"] is True
        else:
            assert refs == []

    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            listed = await agent.conn.list_sessions(cwd=str(world.workspace))
            assert session in [s.session_id for s in listed.sessions]
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        assert "a tool call" in agent.client.text(session, "user_message_chunk")
        with anyio.fail_after(WAIT):
            after = await agent.prompt(session, "after the restart")
        assert after.stop_reason == "end_turn"


async def test_a_stale_stage_decision_reads_the_approval_back_and_asks_the_current_stage(
    tmp_path: Path,
) -> None:
    world = _world(tmp_path, "1.4.2")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:stagerace echo one && ls .; echo three")
    assert response.stop_reason == "end_turn"
    decided = [
        d["params"]["requirementId"]["sourceIndex"] for d in world.host_requests("approval/decide")
    ]
    # Stage 2 was decided against a stage the host had already settled (-32053), then the
    # adapter read the approval back and the user decided stage 3.
    assert decided == [0, 1, 2]
    assert len(world.host_requests("approval/listPending")) == 1
    titles = [r.tool_call.title or "" for r in agent.client.permission_requests]
    assert titles[-1].startswith("Stage 3 of 3")


@pytest.mark.parametrize("directive", ["sim:protected", "sim:protected-bare"])
async def test_a_protected_write_is_asked_as_such_even_when_the_host_leaves_members_out(
    tmp_path: Path, directive: str
) -> None:
    world = _world(tmp_path, "1.4.2")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, f"{directive} .muse/settings.json")
    assert response.stop_reason == "end_turn"
    [request] = agent.client.permission_requests
    assert request.tool_call.title == "Protected write: .muse/settings.json"
    assert request.field_meta is not None
    assert request.field_meta["muse/approval"]["protectedWrite"] is True
    assert {o.kind for o in request.options} <= {"allow_once", "reject_once"}
    assert len(world.host_requests("approval/decide")) == 1


@pytest.mark.parametrize("version", VERSIONS)
async def test_events_a_host_reports_skipped_are_read_back_once_each(
    tmp_path: Path, version: str
) -> None:
    world = _world(tmp_path, version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "sim:gap 3")
    assert response.stop_reason == "end_turn"
    text = agent.client.text(session)
    # The event after the gap was delivered live before the host reported the gap.
    assert text == (
        "resumed after 3 missed eventsmissed event 1 of 3missed event 2 of 3missed event 3 of 3"
    )
    assert len(world.host_requests("view/page")) >= 1


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("quirk", ["no-turn-started", "ack-before-started"])
async def test_a_turn_settles_whatever_order_the_host_starts_it_in(
    tmp_path: Path, version: str, quirk: str
) -> None:
    world = _world(tmp_path, version, MUSE_SIM_QUIRKS=quirk)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            first = await agent.prompt(session, "first\nsim:bash 100")
            second = await agent.prompt(session, "second")
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert "second" in agent.client.text(session)


async def test_a_host_that_drops_initialized_fails_clearly_before_anything_is_submitted(
    tmp_path: Path,
) -> None:
    world = _world(tmp_path, "1.3.0", MUSE_SIM_QUIRKS="drop-initialized")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.prompt(session, "hello")
    failure = failure_of(raised.value)
    assert failure["kind"] == "handshakeIncomplete"
    assert (failure["phase"], failure["execution"], failure["source"]) == (
        "starting",
        "notSubmitted",
        "host",
    )
    assert "did not complete the handshake" in str(raised.value)
    assert world.host_requests("turn/start") == []


async def test_stored_output_on_a_newer_host_is_offered_only_when_the_user_trusts_it(
    tmp_path: Path,
) -> None:
    for trust, expected in (("0", 0), ("1", 1)):
        (tmp_path / trust).mkdir()
        world = _world(tmp_path / trust, "1.4.2", MUSE_ACP_TRUST_NEWER_HOST=trust)
        async with running_agent(world, capabilities=FORMS) as agent:
            session = await agent.new_session()
            with anyio.fail_after(WAIT):
                await agent.prompt(session, "sim:bash 3000")
            assert len(_output_refs(agent.client.updates, session)) == expected


@pytest.mark.parametrize("version", ["1.2.1", "1.3.0", "1.4.2"])
async def test_a_title_muse_gives_the_session_arrives_live_and_a_user_title_still_wins(
    tmp_path: Path, version: str
) -> None:
    world = _world(tmp_path, version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:name Parser cleanup")
            named = _titled(agent.client.updates, session)
            await agent.prompt(session, "/rename My own title")
            await agent.prompt(session, "sim:name Something else")
        titles = [u.title for u in _titled(agent.client.updates, session)]
    [live] = named
    assert live.title == "parser-cleanup"
    assert live.updated_at
    assert titles[-1] == "My own title"
    assert "something-else" not in titles
