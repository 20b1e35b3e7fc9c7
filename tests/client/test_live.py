"""The client against ``muse-acp serve`` whose Muse host is ``muse-sim``: served in process
through the code of ``serve``, and once as the child the client starts itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, TypeAlias

import anyio
import pytest

from muse_acp.agent.handshake.startup import Startup
from muse_acp.client import (
    AgentConnection,
    AgentError,
    PermissionHandler,
    allow_once,
    connect,
    connect_streams,
    decode_page,
    extensions,
    message_text,
    output_ref,
    reject_once,
)
from muse_acp.config import load_config
from muse_acp.rpc import RESOURCE_NOT_FOUND
from muse_acp.sim.in_process import SimLauncher
from muse_acp.sim.model.outputs import BINARY_UNIT, TEXT_UNIT, pattern_chunks
from muse_acp.sim.options.versions import RELEASE_BUILDS
from muse_acp_wire import acp
from tests.in_process import agent_task

from .conftest import LiveSetup, live_setup

pytestmark = pytest.mark.anyio

BUDGET: Final = 60.0
"""Upper bound, in seconds, on one test's whole conversation with the agent."""


@asynccontextmanager
async def live_agent(
    setup: LiveSetup, *, process: bool = False, **options: Any
) -> AsyncIterator[AgentConnection]:
    """The client connected to the agent: served in this process over pipes
    (``tests.in_process``), or, with ``process``, a ``muse-acp serve`` child it starts itself.
    What an earlier start remembered of the Muse is left first, so ``initialize`` offers what
    this Muse has (a first start offers only what it knows when the client asks)."""
    with anyio.fail_after(BUDGET):
        await Startup(load_config(setup.env), setup.env, SimLauncher()).settle()
        if process:
            async with connect(env=setup.env, cwd=setup.workspace, **options) as agent:
                yield agent
            return
        async with (
            agent_task(setup.env) as served,
            connect_streams(served.stdout, served.stdin, **options) as agent,
        ):
            yield agent


async def collect(updates: AsyncIterator[acp.SessionUpdate]) -> list[acp.SessionUpdate]:
    return [update async for update in updates]


Card: TypeAlias = acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate


def tool_cards(updates: list[acp.SessionUpdate]) -> list[Card]:
    return [update for update in updates if isinstance(update, Card)]


def card_text(update: Card) -> str:
    texts = [
        part.content.text
        for part in update.content or []
        if isinstance(part, acp.ContentToolCallContent)
        and isinstance(part.content, acp.TextContentBlock)
    ]
    return "".join(texts)


async def test_initialize_describes_muse_acp_and_what_its_sessions_can_do(live: LiveSetup) -> None:
    async with live_agent(live, process=True) as agent:
        response = agent.initialize_response
    assert response.protocol_version == 1
    assert response.agent_info is not None
    assert response.agent_info.name == "muse-acp"
    capabilities = response.agent_capabilities
    assert capabilities is not None
    assert capabilities.load_session is True
    assert capabilities.session_capabilities is not None
    assert capabilities.session_capabilities.list is not None
    assert capabilities.session_capabilities.close is not None


async def test_a_new_session_offers_modes_and_config_options(live: LiveSetup) -> None:
    async with live_agent(live) as agent:
        session = await agent.new_session(live.workspace)
    assert session.current_mode_id == "default"
    assert session.modes is not None
    assert "default" in [mode.id for mode in session.modes.available_modes]
    assert "mode" in [option.id for option in session.config_options]


async def test_a_plain_prompt_streams_back_the_exact_text(live_any_version: LiveSetup) -> None:
    async with live_agent(live_any_version) as agent:
        session = await agent.new_session(live_any_version.workspace)
        updates = await collect(session.prompt("Hello from the client tests"))
    chunks = [text for text in map(message_text, updates) if text is not None]
    assert "".join(chunks) == "Hello from the client tests"
    assert session.stop_reason == "end_turn"


async def test_a_long_tool_output_is_one_execute_card_with_a_truncation_note(
    live_any_version: LiveSetup,
) -> None:
    async with live_agent(live_any_version, capabilities=extensions()) as agent:
        session = await agent.new_session(live_any_version.workspace)
        cards = tool_cards(await collect(session.prompt("sim:bash 20000")))

    first, final = cards[0], cards[-1]
    assert isinstance(first, acp.ToolCallSessionUpdate)
    assert first.kind == "execute"
    assert first.title
    assert {card.tool_call_id for card in cards} == {first.tool_call_id}
    assert final.status == "completed"
    text = card_text(final)
    assert text.startswith("output-marker\n")
    assert len(text.encode()) < 20000
    assert "\n[" in text
    announced = [ref for ref in map(output_ref, cards) if ref is not None]
    if live_any_version.version == "1.2.1":
        assert announced[-1].byte_len == 20000
        assert announced[-1].session_id == session.session_id
    else:
        assert announced == []


@pytest.mark.parametrize("version", RELEASE_BUILDS)
@pytest.mark.parametrize("kind", ["bash", "binary"])
async def test_a_stored_output_is_read_back_exactly_page_by_page_and_saved(
    tmp_path: Path, version: str, kind: str
) -> None:
    size = 300_000
    unit = TEXT_UNIT if kind == "bash" else BINARY_UNIT
    expected = b"".join(pattern_chunks(unit, size))
    setup = live_setup(tmp_path, version)
    async with live_agent(setup, capabilities=extensions()) as agent:
        session = await agent.new_session(setup.workspace)
        cards = tool_cards(await collect(session.prompt(f"sim:{kind} {size}")))
        refs = [ref for ref in map(output_ref, cards) if ref is not None]
        if version != "1.2.1":
            assert refs == [], "only a verified 1.2.1 host announces stored output"
            return
        pages = [page async for page in session.read_output(refs[-1], page_bytes=65_536)]
        saved = await session.save_output(refs[-1], tmp_path / "saved")
    assert b"".join(decode_page(page) for page in pages) == expected
    assert [page.offset_bytes for page in pages] == list(range(0, size, 65_536))
    assert saved == size
    assert (tmp_path / "saved").read_bytes() == expected


async def test_stopping_a_read_early_withdraws_the_page_asked_for_and_the_session_goes_on(
    live: LiveSetup,
) -> None:
    size = 300_000
    expected = b"".join(pattern_chunks(TEXT_UNIT, size))
    async with live_agent(live, capabilities=extensions()) as agent:
        session = await agent.new_session(live.workspace)
        cards = tool_cards(await collect(session.prompt(f"sim:bash {size}")))
        ref = [ref for ref in map(output_ref, cards) if ref is not None][-1]
        pages = session.read_output(ref, page_bytes=65_536)
        first = await anext(pages)
        await pages.aclose()  # the page asked for in advance is withdrawn ($/cancel_request)
        again = [page async for page in session.read_output(ref, page_bytes=65_536)]
        after = await collect(session.prompt("after the reads"))
    assert decode_page(first) == expected[:65_536]
    assert b"".join(decode_page(page) for page in again) == expected
    assert session.stop_reason == "end_turn"
    assert "".join(filter(None, map(message_text, after))) == "after the reads"


async def run_approval(
    setup: LiveSetup, policy: PermissionHandler
) -> tuple[list[acp.RequestPermissionRequest], list[Card]]:
    asked: list[acp.RequestPermissionRequest] = []

    def recording(request: acp.RequestPermissionRequest) -> Any:
        asked.append(request)
        return policy(request)

    async with live_agent(setup, on_permission=recording) as agent:
        session = await agent.new_session(setup.workspace)
        cards = tool_cards(await collect(session.prompt("sim:approve ls -la")))
    return asked, cards


async def test_allow_once_lets_the_approved_command_run(live: LiveSetup) -> None:
    asked, cards = await run_approval(live, allow_once)
    assert len(asked) == 1
    assert "allow_once" in [option.kind for option in asked[0].options]
    assert asked[0].tool_call.kind == "execute"
    assert cards[-1].status == "completed"
    assert "ls -la" in card_text(cards[-1])


async def test_reject_once_stops_the_command(live: LiveSetup) -> None:
    asked, cards = await run_approval(live, reject_once)
    assert len(asked) == 1
    assert cards[-1].status == "failed"


async def test_sessions_are_listed_loaded_with_their_history_and_closed(live: LiveSetup) -> None:
    async with live_agent(live) as agent:
        session = await agent.new_session(live.workspace)
        assert await session.prompt_text("Remember the tulips") == "Remember the tulips"
        listed = [info async for info in agent.list_sessions(cwd=live.workspace)]
        assert session.session_id in [info.session_id for info in listed]

        loaded = await agent.load_session(session.session_id, live.workspace)
        user = [u for u in loaded.replayed if isinstance(u, acp.UserMessageChunkSessionUpdate)]
        assert [u.content.text for u in user if isinstance(u.content, acp.TextContentBlock)] == [
            "Remember the tulips"
        ]
        replies = [text for text in map(message_text, loaded.replayed) if text is not None]
        assert "".join(replies) == "Remember the tulips"

        await agent.close_session(session.session_id)
        with pytest.raises(AgentError) as caught:
            await loaded.prompt_text("still there?")
    assert caught.value.code == RESOURCE_NOT_FOUND
