"""Stored tool output over the wire: references on cards, exact byte reads, and every refusal.

Every test also checks that reading never started a turn: the host sees exactly one
``turn/start`` per prompt the test sent.
"""

from __future__ import annotations

import base64
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from muse_acp.sim.model.outputs import BINARY_UNIT

from .harness import WAIT, Agent, World, ext_request, running_agent

pytestmark = pytest.mark.anyio

OPTED_IN = schema.ClientCapabilities(field_meta={"muse/output": 1})
MARKER = b"output-marker\n"
"""The line ``sim:bash`` prints, as ``yes output-marker`` would."""
READ = "_muse/readOutput"
OUTPUT_META = "muse/output"


def _pattern(unit: bytes, total: int, offset: int, length: int) -> bytes:
    """Bytes ``offset`` to ``offset + length`` of ``unit`` repeated up to ``total`` bytes."""
    size = max(min(offset + length, total) - offset, 0)
    skip = offset % len(unit)
    return (unit * ((skip + size) // len(unit) + 1))[skip : skip + size]


def _references(agent: Agent, session: str) -> list[dict[str, Any]]:
    """The latest ``muse/output`` entry of each of the session's tool cards, in card order."""
    latest: dict[str, dict[str, Any]] = {}
    for sid, update in agent.client.updates:
        if (
            sid == session
            and update.session_update in ("tool_call", "tool_call_update")
            and update.field_meta
            and OUTPUT_META in update.field_meta
        ):
            latest[update.tool_call_id] = update.field_meta[OUTPUT_META]
    return list(latest.values())


def _target(reference: dict[str, Any]) -> dict[str, Any]:
    return {key: reference[key] for key in ("sessionId", "itemId", "outputRef")}


async def _read(agent: Agent, reference: dict[str, Any], offset: int, length: int) -> bytes:
    """Read one range and return its bytes, checking the page's own consistency."""
    params = {**_target(reference), "offsetBytes": offset, "lengthBytes": length}
    page = await ext_request(agent, READ, params)
    assert {key: page[key] for key in ("sessionId", "itemId", "outputRef")} == _target(reference)
    assert page["offsetBytes"] == offset
    data = (
        base64.b64decode(page["content"], validate=True)
        if page["encoding"] == "base64"
        else page["content"].encode("utf-8")
    )
    assert len(data) == page["byteLen"] <= length
    assert page["eof"] == (offset + len(data) == reference["byteLen"])
    return data


async def _refused(agent: Agent, params: dict[str, Any]) -> int:
    with pytest.raises(acp.RequestError) as raised:
        await ext_request(agent, READ, params)
    return raised.value.code


async def _prompt(agent: Agent, session: str, text: str) -> None:
    with anyio.fail_after(WAIT):
        response = await agent.prompt(session, text)
    assert response.stop_reason == "end_turn"


def _initialize_meta(agent: Agent) -> dict[str, Any]:
    results = [
        m["result"]
        for d, m in agent.frames
        if d == "in" and isinstance(m.get("result"), dict) and "agentCapabilities" in m["result"]
    ]
    assert len(results) == 1, "the initialize response was recorded"
    meta: dict[str, Any] = results[0].get("_meta") or {}
    return meta


async def test_an_opted_in_client_reads_exact_bytes_at_any_offset_repeatedly(world: World) -> None:
    total = 300_000
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        assert _initialize_meta(agent)[OUTPUT_META]["method"] == READ
        session = await agent.new_session()
        await _prompt(agent, session, f"sim:bash {total}")
        reference = _references(agent, session)[-1]
        assert reference["sessionId"] == session
        assert (reference["byteLen"], reference["availability"]) == (total, "available")
        assert (reference["method"], reference["maxLengthBytes"]) == (READ, 1_048_576)
        for offset, length in [(77, 100), (13, 2), (65_535, 65_537), (299_990, 100)]:
            expected = _pattern(MARKER, total, offset, length)
            assert await _read(agent, reference, offset, length) == expected
        assert await _read(agent, reference, 77, 100) == _pattern(MARKER, total, 77, 100)
        assert await _read(agent, reference, total, 10) == b""
        whole = await _read(agent, reference, 0, 1_048_576)
        assert whole == (MARKER * (total // len(MARKER) + 1))[:total]
    assert len(world.host_requests("turn/start")) == 1


async def test_reads_work_after_a_restart_once_the_session_is_loaded(world: World) -> None:
    total = 300_000
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        session = await agent.new_session()
        await _prompt(agent, session, f"sim:bash {total}")
        announced = _references(agent, session)[-1]
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        reannounced = [
            u
            for s, u in agent.client.updates
            if s == session
            and u.session_update == "tool_call_update"
            and u.field_meta
            and u.content is None
            and u.status is None
        ]
        assert [u.field_meta[OUTPUT_META] for u in reannounced] == [announced]
        expected = _pattern(MARKER, total, 123_457, 4096)
        assert await _read(agent, announced, 123_457, 4096) == expected
    assert len(world.host_requests("turn/start")) == 1


async def test_binary_output_comes_back_as_base64_with_exact_bytes(world: World) -> None:
    total = 5000
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        session = await agent.new_session()
        await _prompt(agent, session, f"sim:binary {total}")
        reference = _references(agent, session)[-1]
        params = {**_target(reference), "offsetBytes": 1, "lengthBytes": 64}
        page = await ext_request(agent, READ, params)
        assert page["encoding"] == "base64"
        assert base64.b64decode(page["content"]) == _pattern(BINARY_UNIT, total, 1, 64)
        assert await _read(agent, reference, 0, total) == _pattern(BINARY_UNIT, total, 0, total)
    assert len(world.host_requests("turn/start")) == 1


async def test_a_baseline_client_sees_bounded_text_no_handles_and_cannot_read(
    world: World,
) -> None:
    async with running_agent(world) as agent:
        assert OUTPUT_META not in _initialize_meta(agent)
        session = await agent.new_session()
        await _prompt(agent, session, "sim:bash 300000")
        assert _references(agent, session) == []
        card = [
            u
            for s, u in agent.client.updates
            if s == session and u.session_update.startswith("tool")
        ][-1]
        assert card.status == "completed"
        text = card.content[0].content.text
        assert "output-marker" in text
        assert len(text.encode()) < 70 * 1024
        params = {"sessionId": session, "itemId": "item", "outputRef": "ref"}
        assert await _refused(agent, params) == -32600
    assert world.host_requests("item/readOutput") == []
    assert len(world.host_requests("turn/start")) == 1


async def test_a_1_1_1_host_gets_no_advertisement_and_every_read_fails(
    world_1_1_1: World,
) -> None:
    world = world_1_1_1
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        assert OUTPUT_META not in _initialize_meta(agent)
        session = await agent.new_session()
        await _prompt(agent, session, "sim:bash 300000")
        assert _references(agent, session) == []
        for target in ({"itemId": "item", "outputRef": "ref"}, {"itemId": "i", "outputRef": "r"}):
            assert await _refused(agent, {"sessionId": session, **target}) == -32600
    assert world.host_requests("item/readOutput") == []
    assert len(world.host_requests("turn/start")) == 1


async def test_refused_reads_fail_with_the_code_for_their_cause(world: World) -> None:
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        session = await agent.new_session()
        await _prompt(agent, session, "sim:bash 3000\nsim:unavailable 500")
        stored, unavailable = _references(agent, session)[-2:]
        assert (stored["availability"], unavailable["availability"]) == ("available", "missing")
        other = await agent.new_session()
        await _prompt(agent, other, "sim:bash 100")
        foreign = _references(agent, other)[-1]
        never_prompted = await agent.new_session()
        target = _target(stored)
        cases: dict[str, tuple[dict[str, Any], int]] = {
            "wrong reference": ({**target, "outputRef": unavailable["outputRef"]}, -32602),
            "arbitrary uri": ({**target, "outputRef": "tool-output://x"}, -32602),
            "wrong item": ({**target, "itemId": unavailable["itemId"]}, -32602),
            "another session's reference": ({**_target(foreign), "sessionId": session}, -32602),
            "offset past the length": ({**target, "offsetBytes": 3001}, -32602),
            "negative offset": ({**target, "offsetBytes": -1}, -32602),
            "read over 1 MiB": ({**target, "lengthBytes": 1_048_577}, -32602),
            "empty read": ({**target, "lengthBytes": 0}, -32602),
            "unavailable bytes": (_target(unavailable), -32600),
            "session Muse never ran": ({**target, "sessionId": never_prompted}, -32600),
            "unknown session": ({**target, "sessionId": "no-such-session"}, -32002),
        }
        codes = {name: await _refused(agent, params) for name, (params, _) in cases.items()}
        assert codes == {name: code for name, (_, code) in cases.items()}
        with anyio.fail_after(WAIT):
            await agent.conn.close_session(session_id=session)
        assert await _refused(agent, target) == -32002
    assert world.host_requests("item/readOutput") == [], "no refused read reached the bytes"
    assert len(world.host_requests("turn/start")) == 2


async def test_a_closed_session_reads_again_once_it_is_loaded(world: World) -> None:
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        session = await agent.new_session()
        await _prompt(agent, session, "sim:bash 1000")
        reference = _references(agent, session)[-1]
        with anyio.fail_after(WAIT):
            await agent.conn.close_session(session_id=session)
        assert await _refused(agent, _target(reference)) == -32002
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        assert await _read(agent, reference, 10, 20) == _pattern(MARKER, 1000, 10, 20)
    assert len(world.host_requests("turn/start")) == 1
