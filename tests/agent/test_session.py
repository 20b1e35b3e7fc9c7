"""A session owns its work: admission, cancellation by arrival, closing; the registry's memory."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from muse_acp.agent.context import AgentContext
from muse_acp.agent.sessions.session import MAX_CLOSED_KEPT
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


async def test_a_prompt_waits_for_work_being_cancelled_then_runs(tmp_path: Path) -> None:
    session = add_session(_context(tmp_path), "s-1")
    first = session.begin("a prompt")
    first.cancel()
    admitted: list[str] = []

    async def second() -> None:
        work = await session.admit_prompt(arrival=3)
        admitted.append(work.activity)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(second)
            await anyio.wait_all_tasks_blocked()
            assert admitted == []
            session.end(first)
    assert admitted == ["a prompt"]


async def test_a_prompt_behind_a_cancel_that_never_settles_is_refused_within_the_budget(
    tmp_path: Path,
) -> None:
    session = add_session(_context(tmp_path, cancel=0.1), "s-1")
    session.begin("a prompt").cancel()
    with anyio.fail_after(5), pytest.raises(RpcError) as raised:
        await session.admit_prompt(arrival=3)
    assert raised.value.data == {"busy": "a prompt", "state": "being cancelled"}


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
