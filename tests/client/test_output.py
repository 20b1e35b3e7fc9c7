"""Reading stored tool output: paging by actual byte counts, decoding, saving, refusing."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from muse_acp.client import MAX_PAGE_BYTES, AgentError, OutputRef, decode_page, output_ref
from muse_acp.client.session import Session
from muse_acp.rpc import INTERNAL_ERROR, JsonObject, RpcError
from muse_acp_wire import acp

from .fake_agent import SESSION_ID, WAIT, FakeAgent, fake_client

pytestmark = pytest.mark.anyio

TEXT = b"output-marker\n" * 150
BINARY = bytes(range(256)) * 4
REF = OutputRef(SESSION_ID, "item-7", "ref-7")


async def read_all(session: Session, ref: OutputRef) -> list[acp.MuseReadOutputResponse]:
    return [page async for page in session.read_output(ref)]


def reads(agent: FakeAgent) -> list[tuple[int, int]]:
    """The offset and length of every read the agent was asked for, in order."""
    found = []
    for params in agent.params_of("_muse/readOutput"):
        assert isinstance(params, dict)
        offset, length = params["offsetBytes"], params["lengthBytes"]
        assert isinstance(offset, int)
        assert isinstance(length, int)
        found.append((offset, length))
    return found


def served(agent: FakeAgent) -> list[int]:
    """The offsets of the reads that could make pages (within the output), in order."""
    return [offset for offset, _ in reads(agent) if offset < len(agent.output)]


async def test_pages_advance_by_each_pages_actual_byte_count_until_eof() -> None:
    agent = FakeAgent()
    agent.output = TEXT + BINARY + TEXT
    agent.page_limits = {0: 1000, 1000: 7, 1007: 2100}
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        pages = [page async for page in session.read_output(REF)]

    assert served(agent) == [0, 1000, 1007, 3107]
    assert {length for _, length in reads(agent)} == {MAX_PAGE_BYTES}
    # The one other read was the second page, asked for in advance as if the first were full;
    # after a short page the next one is asked for only once that page is in.
    assert [offset for offset, _ in reads(agent)] == [0, MAX_PAGE_BYTES, 1000, 1007, 3107]
    assert [page.byte_len for page in pages] == [1000, 7, 2100, len(agent.output) - 3107]
    assert [page.eof for page in pages] == [False, False, False, True]
    assert {page.encoding for page in pages} == {"utf8", "base64"}
    assert b"".join(decode_page(page) for page in pages) == agent.output


async def test_the_next_page_is_asked_for_before_this_one_is_answered() -> None:
    agent = FakeAgent()
    agent.output = TEXT * 4
    agent.answer_first_page_after_the_next_is_asked = True
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        pages = [page async for page in session.read_output(REF, page_bytes=1000)]

    assert served(agent) == list(range(0, len(agent.output), 1000))
    assert b"".join(decode_page(page) for page in pages) == agent.output


async def test_nothing_is_asked_for_past_the_announced_end() -> None:
    agent = FakeAgent()
    agent.output = TEXT * 4
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        ref = OutputRef(SESSION_ID, "item-7", "ref-7", byte_len=len(agent.output))
        pages = [page async for page in session.read_output(ref, page_bytes=1000)]

    assert reads(agent) == [(offset, 1000) for offset in range(0, len(agent.output), 1000)]
    assert b"".join(decode_page(page) for page in pages) == agent.output


async def test_a_reader_that_stops_early_withdraws_the_page_asked_for_in_advance() -> None:
    agent = FakeAgent()
    agent.output = TEXT * 4
    agent.held_offsets = {1000}
    async with fake_client(agent) as client:
        session = await client.new_session("/workspace")
        pages = session.read_output(REF, page_bytes=1000)
        first = await anext(pages)
        await pages.aclose()
        with anyio.fail_after(WAIT):
            await agent.withdrawal.wait()

    assert decode_page(first) == agent.output[:1000]
    assert reads(agent) == [(0, 1000), (1000, 1000)]
    assert agent.withdrawn == [1000], "the read asked for in advance was withdrawn"


async def test_save_output_writes_the_decoded_bytes_and_returns_their_count(
    tmp_path: Path,
) -> None:
    agent = FakeAgent()
    agent.output = BINARY + TEXT
    agent.page_limits = {0: 300, 300: 1}
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

    assert served(agent) == list(range(0, len(agent.output), 4096))
    assert {length for _, length in reads(agent)} == {4096}
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
    # Nothing is asked for after the page that did not add up, beyond the read already under way.
    assert served(agent) == [0]


async def test_a_page_beyond_the_announced_size_ends_the_read() -> None:
    agent = FakeAgent()
    agent.output = TEXT
    agent.page_limits = {0: 100}
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
