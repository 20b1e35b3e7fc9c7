"""A prompt on a warm session starts its Muse turn as the prompt is read (``early_prompt``), on
every simulated Muse version. What the user sees of it is what the ordinary way shows; a cancel
right behind it, by ``session/cancel`` or ``$/cancel_request``, stops it as it stops any turn; a
prompt right behind it waits its turn; and a prompt the early way must not take (a command, plan
mode, a chosen effort, a session's first prompt) takes the ordinary way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from muse_acp.agent.prompts import early_prompt
from muse_acp.agent.turns.submission import Submission, submit_at_once
from muse_acp.host.client import MspHost
from muse_acp_wire import msp

from .harness import WAIT, Agent, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

REQUEST_CANCELLED = -32800
PROMPT = "session/prompt"


def _started_early(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The text of every prompt whose turn the early way started, as it starts."""
    started: list[str] = []

    def watched(
        host: MspHost, params: msp.TurnStartParams, *, hold_limit: int
    ) -> Submission | None:
        submission = submit_at_once(host, params, hold_limit=hold_limit)
        if submission is not None:
            [part] = params.input
            assert isinstance(part, msp.TextTurnInputPart)
            started.append(part.text)
        return submission

    monkeypatch.setattr(early_prompt, "submit_at_once", watched)
    return started


def _shown(agent: Agent, session: str) -> dict[str, Any]:
    """What the user saw of the session, without the ids that differ from run to run."""
    calls = [
        (update.get("title"), update.get("status"))
        for update in agent.raw_updates(session, "tool_call", "tool_call_update")
    ]
    return {
        "said": agent.client.text(session),
        "thought": agent.client.text(session, "agent_thought_chunk"),
        "tool calls": calls,
    }


async def _warm(agent: Agent) -> str:
    """A session whose host runs: its first prompt started it, the ordinary way."""
    session = await agent.new_session()
    with anyio.fail_after(WAIT):
        assert (await agent.prompt(session, "warm up")).stop_reason == "end_turn"
    return session


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_warm_prompt_starts_as_it_is_read_and_shows_what_the_ordinary_way_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    prompt = "sim:stream 5\nsim:bash 300"
    seen: dict[str, tuple[str, dict[str, Any]]] = {}
    for way in ("ordinary", "early"):
        if way == "ordinary":
            monkeypatch.setattr(early_prompt, "start_early", lambda *_: None)
        else:
            monkeypatch.undo()
            started = _started_early(monkeypatch)
        (tmp_path / way).mkdir()
        world = make_world(tmp_path / way, version=version)
        async with running_agent(world) as agent:
            session = await _warm(agent)
            with anyio.fail_after(WAIT):
                response = await agent.prompt(session, prompt)
            seen[way] = (response.stop_reason, _shown(agent, session))
    assert started == [prompt], "the warm prompt alone started early"
    assert seen["early"] == seen["ordinary"]
    assert seen["early"][0] == "end_turn"
    assert "t0 t1 t2 t3 t4 " in seen["early"][1]["said"]


@pytest.mark.parametrize("way", ["session/cancel", "$/cancel_request"])
@pytest.mark.parametrize("version", VERSIONS)
async def test_a_cancel_right_behind_an_early_prompt_stops_its_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, way: str
) -> None:
    world = make_world(tmp_path, version=version)
    started = _started_early(monkeypatch)
    async with running_agent(world) as agent:
        session = await _warm(agent)
        answers: list[str | int] = []

        async def held() -> None:
            try:
                answers.append((await agent.prompt(session, "sim:hold")).stop_reason)
            except acp.RequestError as error:
                answers.append(error.code)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(held)
                await agent.client.wait_until(lambda: bool(started))
                if way == "session/cancel":
                    await agent.conn.cancel(session_id=session)
                else:
                    [sent] = [
                        message["id"]
                        for direction, message in agent.frames
                        if direction == "out" and message.get("method") == PROMPT
                    ][-1:]
                    cancel = {"requestId": sent}
                    await agent.conn._conn.send_notification("$/cancel_request", cancel)
            after = await agent.prompt(session, "after the cancel")
    # A session cancel answers the prompt cancelled; a withdrawn request, REQUEST_CANCELLED.
    assert answers == ["cancelled" if way == "session/cancel" else REQUEST_CANCELLED]
    assert started == ["sim:hold", "after the cancel"]
    assert len(world.host_requests("turn/cancel")) == 1, "Muse's turn is stopped too"
    assert after.stop_reason == "end_turn"
    assert agent.client.text(session).endswith("after the cancel")


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_prompt_right_behind_an_early_prompt_waits_its_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    started = _started_early(monkeypatch)
    first = "first\nsim:approve echo one"
    async with running_agent(world) as agent:
        session = await _warm(agent)
        asked, release = anyio.Event(), anyio.Event()

        async def held_permission() -> None:
            asked.set()
            await release.wait()

        agent.client.on_permission = held_permission
        answers: list[tuple[str, str]] = []

        async def send(text: str) -> None:
            answers.append((text, (await agent.prompt(session, text)).stop_reason))

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(send, first)
                await asked.wait()
                tasks.start_soon(send, "right behind it")
                # Written before the permission's answer, so read before it too: queued.
                await agent.client.wait_until(lambda: _prompts_written(agent) == 3)
                release.set()
    assert started == [first], "the second one found the session taken, and queued"
    assert answers == [(first, "end_turn"), ("right behind it", "end_turn")]
    assert agent.client.text(session).endswith("right behind it")
    assert len(world.host_requests("turn/start")) == 3


def _prompts_written(agent: Agent) -> int:
    """How many prompts the client has written."""
    frames = agent.frames
    return sum(1 for way, message in frames if way == "out" and message.get("method") == PROMPT)


@pytest.mark.parametrize("version", VERSIONS)
async def test_what_must_be_looked_at_first_takes_the_ordinary_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    started = _started_early(monkeypatch)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            first = await agent.prompt(session, "the first prompt starts the host")
            status = await agent.prompt(session, "/status")
            await agent.conn.set_session_mode(session_id=session, mode_id="plan")
            planned = await agent.prompt(session, "plan this")
    assert started == [], "none of them started early"
    assert [first.stop_reason, status.stop_reason, planned.stop_reason] == ["end_turn"] * 3
    assert "/status" not in [
        part.get("text")
        for frame in world.host_requests("turn/start")
        for part in frame["params"]["input"]
    ], "a command never reaches Muse"
