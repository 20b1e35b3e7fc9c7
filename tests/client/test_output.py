"""Reading stored tool output: paging by actual byte counts, decoding, saving, refusing."""

from __future__ import annotations

from pathlib import Path

import pytest

from muse_acp.client import MAX_PAGE_BYTES, AgentError, OutputRef, decode_page, output_ref
from muse_acp.client.session import Session
from muse_acp.rpc import INTERNAL_ERROR, JsonObject, RpcError
from muse_acp_wire import acp

from .fake_agent import SESSION_ID, FakeAgent, fake_client

pytestmark = pytest.mark.anyio

TEXT = b"output-marker\n" * 150
BINARY = bytes(range(256)) * 4
REF = OutputRef(SESSION_ID, "item-7", "ref-7")


async def read_all(session: Session, ref: OutputRef) -> list[acp.MuseReadOutputResponse]:
    return [page async for page in session.read_output(ref)]


def reads(agent: FakeAgent) -> list[tuple[object, object]]:
    return [
        (params["offsetBytes"], params["lengthBytes"])
        for params in agent.params_of("_muse/readOutput")
        if isinstance(params, dict)
    ]


async def test_pages_advance_by_each_pages_actual_byte_count_until_eof() -> None:
    agent = FakeAgent()
    agent.output = TEXT + BINARY + TEXT
    agent.page_sizes = [1000, 7, 2100]
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        pages = [page async for page in session.read_output(REF)]

    assert reads(agent) == [
        (0, MAX_PAGE_BYTES),
        (1000, MAX_PAGE_BYTES),
        (1007, MAX_PAGE_BYTES),
        (3107, MAX_PAGE_BYTES),
    ]
    assert [page.byte_len for page in pages] == [1000, 7, 2100, len(agent.output) - 3107]
    assert [page.eof for page in pages] == [False, False, False, True]
    assert {page.encoding for page in pages} == {"utf8", "base64"}
    assert b"".join(decode_page(page) for page in pages) == agent.output


async def test_save_output_writes_the_decoded_bytes_and_returns_their_count(
    tmp_path: Path,
) -> None:
    agent = FakeAgent()
    agent.output = BINARY + TEXT
    agent.page_sizes = [300, 1]
    target = tmp_path / "output.bin"
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        card_meta = {"sessionId": SESSION_ID, "itemId": "item-7", "outputRef": "ref-7"}
        written = await session.save_output(card_meta, target)

    assert written == len(agent.output)
    assert target.read_bytes() == agent.output


async def test_pages_are_no_larger_than_the_agent_advertises() -> None:
    agent = FakeAgent()
    agent.initialize_meta = {
        "muse/output": {"version": 1, "method": "_muse/readOutput", "maxLengthBytes": 4096}
    }
    agent.output = TEXT * 4
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        assert client.output_page_bytes == 4096
        pages = [page async for page in session.read_output(REF)]

    assert reads(agent) == [(offset, 4096) for offset in range(0, len(agent.output), 4096)]
    assert b"".join(decode_page(page) for page in pages) == agent.output


def stalled(page: JsonObject) -> JsonObject:
    return {**page, "content": "", "byteLen": 0, "eof": False}


def misplaced(page: JsonObject) -> JsonObject:
    return {**page, "offsetBytes": 5}


def mislabelled(page: JsonObject) -> JsonObject:
    return {**page, "byteLen": 3}


@pytest.mark.parametrize("override", [stalled, misplaced, mislabelled])
async def test_an_inconsistent_page_ends_the_read_with_an_internal_error(override: object) -> None:
    agent = FakeAgent()
    agent.output = TEXT
    assert callable(override)
    agent.page_override = override
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        with pytest.raises(RpcError) as caught:
            await read_all(session, REF)
    assert caught.value.code == INTERNAL_ERROR
    assert len(agent.params_of("_muse/readOutput")) == 1


async def test_a_page_beyond_the_announced_size_ends_the_read() -> None:
    agent = FakeAgent()
    agent.output = TEXT
    agent.page_sizes = [100]
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        with pytest.raises(RpcError) as caught:
            await read_all(session, OutputRef(SESSION_ID, "i", "r", byte_len=50))
    assert caught.value.code == INTERNAL_ERROR


async def test_a_refused_read_raises_the_agents_error_and_leaves_no_file(tmp_path: Path) -> None:
    agent = FakeAgent()
    agent.refuse["_muse/readOutput"] = RpcError.invalid_request("muse/output was not negotiated")
    target = tmp_path / "never.txt"
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        with pytest.raises(AgentError) as caught:
            await session.save_output(REF, target)
    assert caught.value.message == "muse/output was not negotiated"
    assert not target.exists()


async def test_reading_another_sessions_output_from_a_session_is_refused() -> None:
    agent = FakeAgent()
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        with pytest.raises(ValueError, match="belongs to session other"):
            session.read_output(OutputRef("other", "i", "r"))


def test_a_reference_is_read_from_a_tool_cards_meta() -> None:
    card = acp.ToolCallUpdateSessionUpdate.model_validate(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call-1",
            "_meta": {
                "muse/output": {
                    "sessionId": "s-1",
                    "itemId": "item-1",
                    "outputRef": "ref-1",
                    "byteLen": 20000,
                    "availability": "available",
                }
            },
        }
    )
    assert output_ref(card) == OutputRef("s-1", "item-1", "ref-1", 20000)
    assert OutputRef.of(card) == OutputRef("s-1", "item-1", "ref-1", 20000)
    plain = acp.ToolCallUpdateSessionUpdate(session_update="tool_call_update", tool_call_id="c")
    assert output_ref(plain) is None
    with pytest.raises(ValueError, match="outputRef"):
        OutputRef.of({"sessionId": "s", "itemId": "i"})
