"""JetBrains AIR file-change reports against muse-sim: negotiated only when asked, one report
before each asking prompt's response, ``unavailable`` for a cancelled prompt, -32602 for a
malformed request, and every frame valid for the official SDK."""

from __future__ import annotations

from typing import Any, Final

import acp
import anyio
import pytest
from acp import schema

from .harness import WAIT, Agent, World, choose, running_agent
from .test_conformance import _check

pytestmark = pytest.mark.anyio

ASKS: Final = schema.ClientCapabilities(
    field_meta={"jetbrains": {"air": {"version": 1, "capabilities": ["agentFileChangeReport"]}}}
)
ADVERTISED: Final = {"air": {"version": 1, "capabilities": ["agentFileChangeReport"]}}


def _initialize_meta(agent: Agent) -> dict[str, Any]:
    result = next(m["result"] for d, m in agent.frames if d == "in" and m.get("id") == 0)
    meta: dict[str, Any] = result.get("_meta") or {}
    return meta


def _asking(request_id: str) -> dict[str, Any]:
    return {
        "jetbrains": {
            "air": {"agentFileChangeReportRequest": {"version": 1, "requestId": request_id}}
        }
    }


async def _prompt(
    agent: Agent, session: str, text: str, meta: dict[str, Any] | None
) -> schema.PromptResponse:
    # The SDK sends a prompt's keyword arguments as its `_meta`.
    return await agent.conn.prompt(
        session_id=session, prompt=[acp.text_block(text)], **(meta or {})
    )


def _reports(agent: Agent) -> list[tuple[int, dict[str, Any]]]:
    """(frame index, agentFileChangeReport) of every report the agent sent."""
    found = []
    for index, (direction, message) in enumerate(agent.frames):
        if direction != "in" or message.get("method") != "session/update":
            continue
        update = message["params"]["update"]
        air = ((update.get("_meta") or {}).get("jetbrains") or {}).get("air")
        if air is not None:
            assert update["sessionUpdate"] == "session_info_update"
            assert air["version"] == 1
            found.append((index, air["agentFileChangeReport"]))
    return found


def _answer_index(agent: Agent, text: str) -> int:
    """The frame index of the answer to the prompt whose text is ``text``."""
    request = next(
        m
        for d, m in agent.frames
        if d == "out"
        and m.get("method") == "session/prompt"
        and m["params"]["prompt"][0].get("text") == text
    )
    return next(
        i
        for i, (d, m) in enumerate(agent.frames)
        if d == "in" and m.get("id") == request["id"] and "method" not in m
    )


async def test_the_report_is_advertised_only_to_a_client_that_asks(world: World) -> None:
    async with running_agent(world) as plain:
        assert "jetbrains" not in _initialize_meta(plain)
    async with running_agent(world, capabilities=ASKS) as asking:
        assert _initialize_meta(asking)["jetbrains"] == ADVERTISED
    _check(plain.frames)
    _check(asking.frames)


async def test_an_asking_prompt_gets_one_report_of_the_written_file_before_its_answer(
    world: World,
) -> None:
    written = world.workspace / "notes.txt"  # the simulated write_file names it, writes nothing
    async with running_agent(world, capabilities=ASKS) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            plain = await _prompt(agent, session, "sim:protected plain.txt", None)
            assert _reports(agent) == []
            text = "sim:protected notes.txt\nsim:bash 10"
            asked = await _prompt(agent, session, text, _asking("req-1"))
    assert (plain.stop_reason, asked.stop_reason) == ("end_turn", "end_turn")
    ((index, report),) = _reports(agent)
    assert index < _answer_index(agent, text)
    assert report == {
        "version": 1,
        "requestId": "req-1",
        "status": "reported",
        "paths": [str(written)],
        "declaredComplete": False,
        "truncated": False,
        "uncertainty": report["uncertainty"],
    }
    assert "shell" in report["uncertainty"]
    assert _check(agent.frames) > 0


async def test_a_rejected_edit_is_not_reported(world: World) -> None:
    (world.workspace / "a.txt").write_text("one two\n")
    async with running_agent(world, capabilities=ASKS) as agent:
        agent.client.policy = choose("reject_once")
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await _prompt(agent, session, "sim:edit a.txt one ONE", _asking("r"))
    ((_, report),) = _reports(agent)
    assert (report["status"], report["paths"]) == ("reported", [])


async def test_a_cancelled_prompt_reports_unavailable(world: World) -> None:
    async with running_agent(world, capabilities=ASKS) as agent:
        session = await agent.new_session()
        stops: list[str] = []

        async def run() -> None:
            response = await _prompt(agent, session, "sim:plan\nsim:hold", _asking("c.1"))
            stops.append(response.stop_reason)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await agent.client.wait_for(session, "plan")
                await agent.conn.cancel(session_id=session)
    assert stops == ["cancelled"]
    ((index, report),) = _reports(agent)
    assert index < _answer_index(agent, "sim:plan\nsim:hold")
    assert report == {
        "version": 1,
        "requestId": "c.1",
        "status": "unavailable",
        "reason": "cancelled",
    }
    _check(agent.frames)


async def test_a_malformed_request_is_invalid_params_and_runs_nothing(world: World) -> None:
    async with running_agent(world, capabilities=ASKS) as agent:
        session = await agent.new_session()
        bad = _asking("has space")
        bad["jetbrains"]["air"]["agentFileChangeReportRequest"]["extra"] = 1
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await _prompt(agent, session, "sim:protected x.txt", bad)
    assert raised.value.code == -32602
    assert "agentFileChangeReportRequest" in str(raised.value)
    assert _reports(agent) == []
    assert world.host_requests("turn/start") == []
    assert not (world.workspace / "x.txt").exists()
