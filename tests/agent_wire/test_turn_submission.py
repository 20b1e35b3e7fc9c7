"""A prompt's ``turn/start`` goes out before its turn is set up: whatever Muse sends meanwhile is
the turn's, in order, on every simulated Muse version, and a host that floods that window fails
the turn with a clear error instead of being buffered without bound."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import acp
import anyio
import pytest

from muse_acp.agent.hosting.execution import ExecutionHost
from muse_acp.agent.prompts import model_turn
from muse_acp.agent.turns.submission import HeldEvents
from muse_acp.host.client import MspHost
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

from .harness import WAIT, failure_of, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

DELTAS = 6


def _slow_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the next turn's setup wait until Muse has sent the whole turn, so every event of it
    arrives between ``turn/start`` being written and the turn listening."""
    whole_turn_sent = anyio.Event()
    keep = HeldEvents._keep

    def keeping(self: HeldEvents, method: str, params: WireModel) -> None:
        keep(self, method, params)
        if isinstance(params, msp.TurnCompletedParams):
            whole_turn_sent.set()

    holding = ExecutionHost.holding

    @asynccontextmanager
    async def late(self: ExecutionHost, host: MspHost) -> AsyncIterator[MspHost]:
        if not whole_turn_sent.is_set():
            with anyio.fail_after(WAIT):
                await whole_turn_sent.wait()
        async with holding(self, host) as held:
            yield held

    monkeypatch.setattr(HeldEvents, "_keep", keeping)
    monkeypatch.setattr(ExecutionHost, "holding", late)


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_turn_muse_ran_before_it_was_set_up_is_shown_whole_and_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        _slow_setup(monkeypatch)
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, f"sim:stream {DELTAS}")
        shown = agent.client.text(session)
        monkeypatch.undo()
        with anyio.fail_after(WAIT):
            again = await agent.prompt(session, "sim:stream 2")
    assert response.stop_reason == "end_turn"
    assert shown == "".join(f"t{index} " for index in range(DELTAS))
    assert again.stop_reason == "end_turn", "the session's events are its next turn's again"
    assert agent.client.text(session) == shown + "t0 t1 "
    assert not world.host_requests("turn/cancel")


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_host_that_floods_the_turns_setup_fails_the_turn_and_the_session_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        _slow_setup(monkeypatch)
        monkeypatch.setattr(model_turn, "MAX_HELD_EVENTS", 3)
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.prompt(session, f"sim:stream {DELTAS}")
        monkeypatch.undo()
        with anyio.fail_after(WAIT):
            again = await agent.prompt(session, "sim:stream 2")
    error = raised.value
    assert failure_of(error)["kind"] == "hostProtocolError"
    assert failure_of(error)["source"] == "host"
    assert "more than 3 events" in str(error)
    assert again.stop_reason == "end_turn"
    assert agent.client.text(session).endswith("t0 t1 ")
