"""Stored-output reads use the session's running turn host, else one kept read host, and search
history only when it changed: paging through an output starts at most one process and pages
history once."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from acp import schema

from .harness import WAIT, Agent, World, ext_request, running_agent

pytestmark = pytest.mark.anyio

OPTED_IN = schema.ClientCapabilities(field_meta={"muse/output": 1})
MARKER = b"output-marker\n"
PAGE = 65_536


def _reference(agent: Agent, session: str) -> dict[str, Any]:
    """The ``muse/output`` entry of the session's latest tool card that has one."""
    entries: list[dict[str, Any]] = [
        update.field_meta["muse/output"]
        for sid, update in agent.client.updates
        if sid == session
        and update.session_update in ("tool_call", "tool_call_update")
        and update.field_meta
        and "muse/output" in update.field_meta
    ]
    return entries[-1]


async def _read(agent: Agent, reference: dict[str, Any], offset: int) -> str:
    params = {
        "sessionId": reference["sessionId"],
        "itemId": reference["itemId"],
        "outputRef": reference["outputRef"],
        "offsetBytes": offset,
        "lengthBytes": PAGE,
    }
    page = await ext_request(agent, "_muse/readOutput", params)
    assert page["offsetBytes"] == offset
    content: str = page["content"]
    return content


async def _prompt(agent: Agent, session: str, text: str) -> None:
    with anyio.fail_after(WAIT):
        response = await agent.prompt(session, text)
    assert response.stop_reason == "end_turn"


async def test_paging_right_after_the_turn_reads_on_its_host_and_pages_history_once(
    world: World,
) -> None:
    total = 5 * PAGE
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        session = await agent.new_session()
        await _prompt(agent, session, f"sim:bash {total}")
        hosts_for_the_turn = len(world.host_requests("initialize"))
        reference = _reference(agent, session)
        pages = [await _read(agent, reference, offset) for offset in range(0, total, PAGE)]
    assert "".join(pages).encode() == (MARKER * (total // len(MARKER) + 1))[:total]
    assert len(world.host_requests("initialize")) == hosts_for_the_turn, (
        "the turn's host is up: reading on it starts no process"
    )
    assert len(world.host_requests("session/read")) == 5, "every read checks the session"
    assert len(world.host_requests("view/page")) == 1
    assert len(world.host_requests("item/readOutput")) == 5


async def test_paging_a_loaded_session_starts_one_read_host(world: World) -> None:
    total = 3 * PAGE
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        session = await agent.new_session()
        await _prompt(agent, session, f"sim:bash {total}")
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        hosts_before = len(world.host_requests("initialize"))
        reference = _reference(agent, session)
        pages = [await _read(agent, reference, offset) for offset in range(0, total, PAGE)]
    assert "".join(pages).encode() == (MARKER * (total // len(MARKER) + 1))[:total]
    assert len(world.host_requests("initialize")) == hosts_before + 1, (
        "no turn runs the session here: one read host serves every page"
    )
    assert len(world.host_requests("turn/start")) == 1, "reading sends no turn"


async def test_a_read_after_the_history_grew_searches_it_again(world: World) -> None:
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        session = await agent.new_session()
        await _prompt(agent, session, "sim:bash 1000")
        first = _reference(agent, session)
        assert (await _read(agent, first, 0)).encode() == (MARKER * 72)[:1000]
        await _prompt(agent, session, "sim:bash 2000")
        second = _reference(agent, session)
        assert (await _read(agent, first, 14)).encode() == (MARKER * 72)[14:1000]
        assert (await _read(agent, second, 0)).encode() == (MARKER * 143)[:2000]
        assert (await _read(agent, second, 28)).encode() == (MARKER * 143)[28:2000]
    # The first read searched; the turn in between changed the history, so the next read of
    # each item searched again; the last read reused what the one before it found.
    assert len(world.host_requests("view/page")) == 3
    assert len(world.host_requests("item/readOutput")) == 4
