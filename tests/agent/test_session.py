"""A session owns its work: admission, cancellation by arrival, closing; the registry's memory."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from muse_acp.agent.context import AgentContext
from muse_acp.agent.sessions.session import MAX_CLOSED_KEPT
from muse_acp.agent.turns.prompt_queue import MAX_QUEUED
from muse_acp.config import AdapterConfig, Deadlines
from muse_acp.rpc import INVALID_REQUEST, RESOURCE_NOT_FOUND, RpcError

from .fakes import add_session

pytestmark = pytest.mark.anyio


def _context(tmp_path: Path, cancel: float = 1.0) -> AgentContext:
    return AgentContext(AdapterConfig(data_dir=tmp_path, deadlines=Deadlines(cancel=cancel)))


def test_a_cancel_stops_work_that_arrived_before_it_but_had_not_begun(tmp_path: Path) -> None:
    session = add_session(_context(tmp_path), "s-1")
    session.cancel(arrival=7)
    early = session.begin("a prompt", arrival=5)
    assert early.cancel_requested
    session.end(early)
    later = session.begin("a prompt", arrival=9)
    assert not later.cancel_requested


def test_work_that_runs_refuses_more_and_says_what_runs(tmp_path: Path) -> None:
    session = add_session(_context(tmp_path), "s-1")
    session.begin("a prompt")
    with pytest.raises(RpcError) as raised:
        session.begin("a configuration change")
    assert raised.value.code == INVALID_REQUEST
    assert raised.value.data == {"busy": "a prompt", "state": "running"}


async def test_a_prompt_behind_a_prompt_being_cancelled_queues_and_runs_when_it_ends(
    tmp_path: Path,
) -> None:
    session = add_session(_context(tmp_path), "s-1")
    first = session.begin("a prompt")
    first.cancel()
    admitted: list[bool] = []

    async def second() -> None:
        work = await session.admit_prompt(arrival=3)
        admitted.append(await session.wait_turn(work))
        assert session.work is work

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(second)
            await anyio.wait_all_tasks_blocked()
            assert admitted == []
            session.end(first)
    assert admitted == [True]


async def test_a_prompt_behind_a_change_being_cancelled_that_never_settles_is_refused(
    tmp_path: Path,
) -> None:
    session = add_session(_context(tmp_path, cancel=0.1), "s-1")
    session.begin("a configuration change").cancel()
    with anyio.fail_after(5), pytest.raises(RpcError) as raised:
        await session.admit_prompt(arrival=3)
    assert raised.value.data == {"busy": "a configuration change", "state": "being cancelled"}


async def test_queued_prompts_run_in_arrival_order_and_a_cancel_empties_the_queue(
    tmp_path: Path,
) -> None:
    session = add_session(_context(tmp_path), "s-1")
    running = session.begin("a prompt", arrival=1)
    queued = [await session.admit_prompt(arrival=n) for n in (2, 3, 4)]
    session.end(running)
    assert session.work is queued[0]
    session.cancel(arrival=5)
    assert [work.cancel_requested for work in queued] == [True, True, True]
    with anyio.fail_after(5):
        assert [await session.wait_turn(work) for work in queued] == [True, False, False]
    session.end(queued[0])
    assert session.work is None


async def test_a_full_queue_refuses_the_next_prompt_saying_so(tmp_path: Path) -> None:
    session = add_session(_context(tmp_path), "s-1")
    session.begin("a prompt", arrival=1)
    for arrival in range(2, 2 + MAX_QUEUED):
        await session.admit_prompt(arrival)
    with pytest.raises(RpcError) as raised:
        await session.admit_prompt(arrival=100)
    assert raised.value.code == INVALID_REQUEST
    assert f"already has {MAX_QUEUED} prompts waiting" in raised.value.message
    assert "session/cancel" in raised.value.message
    assert raised.value.data == {"busy": "a prompt", "state": "running", "queued": MAX_QUEUED}


def test_closing_stops_the_work_and_the_session_stays_known_as_closed(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    session = add_session(ctx, "s-1")
    work = session.begin("a prompt")
    session.close()
    assert work.cancel_requested
    with pytest.raises(RpcError) as raised:
        ctx.sessions.require("s-1")
    assert raised.value.code == RESOURCE_NOT_FOUND
    assert raised.value.data == {"sessionId": "s-1", "closed": True}


def test_the_registry_forgets_the_oldest_closed_sessions(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    for index in range(MAX_CLOSED_KEPT + 10):
        add_session(ctx, f"s-{index}").close()
    add_session(ctx, "open-one")
    with pytest.raises(RpcError) as forgotten:
        ctx.sessions.require("s-0")
    assert forgotten.value.data == {"sessionId": "s-0"}
    with pytest.raises(RpcError) as remembered:
        ctx.sessions.require(f"s-{MAX_CLOSED_KEPT + 9}")
    assert remembered.value.data == {"sessionId": f"s-{MAX_CLOSED_KEPT + 9}", "closed": True}
    assert ctx.sessions.require("open-one").session_id == "open-one"
