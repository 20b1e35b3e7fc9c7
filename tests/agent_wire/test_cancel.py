"""Cancellation always settles the prompt, and never leaks one turn's output into the next."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from .harness import WAIT, Agent, World, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio


async def test_cancel_during_a_held_turn_resolves_cancelled(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        results: list[str] = []

        async def run() -> None:
            response = await agent.prompt(session, "sim:plan\nsim:hold")
            results.append(response.stop_reason)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await agent.client.wait_for(session, "plan")
                await agent.conn.cancel(session_id=session)
        assert results == ["cancelled"]
        assert len(world.host_requests("turn/cancel")) == 1
        with anyio.fail_after(WAIT):
            after = await agent.prompt(session, "next prompt")
        assert after.stop_reason == "end_turn"
        assert "next prompt" in agent.client.text(session)


async def test_cancel_racing_the_turns_completion_always_settles(world: World) -> None:
    """The cancel lands at every point of a short turn; each prompt settles, none hangs."""
    async with running_agent(world) as agent:
        session = await agent.new_session()
        outcomes: list[str] = []
        for attempt in range(25):
            async with anyio.create_task_group() as tg:

                async def run(n: int = attempt) -> None:
                    response = await agent.prompt(session, f"race {n}\nsim:bash 3000")
                    outcomes.append(response.stop_reason)

                with anyio.fail_after(WAIT):
                    tg.start_soon(run)
                    for _ in range(attempt % 5):
                        await anyio.lowlevel.checkpoint()
                    await agent.conn.cancel(session_id=session)
        assert len(outcomes) == 25
        assert set(outcomes) <= {"cancelled", "end_turn"}
        with anyio.fail_after(WAIT):
            final = await agent.prompt(session, "after the races")
        assert final.stop_reason == "end_turn"
        last_turn_text = agent.client.text(session).rsplit("race 24", 1)[-1]
        assert "after the races" in last_turn_text


async def test_cancel_withdraws_a_pending_permission_request(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        asked = anyio.Event()
        release = anyio.Event()

        async def hold_permission() -> None:
            asked.set()
            await release.wait()

        agent.client.on_permission = hold_permission
        results: list[str] = []
        settled = anyio.Event()

        async def run() -> None:
            results.append((await agent.prompt(session, "sim:approve rm -rf build")).stop_reason)
            settled.set()

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await asked.wait()
                await agent.conn.cancel(session_id=session)
                # The prompt settles while the client still holds the permission dialog open.
                await settled.wait()
                release.set()
        assert results == ["cancelled"]
        assert world.host_requests("approval/decide") == []


LATE_STREAM = "sim:stream 3000"
"""Text deltas for seconds on end (a millisecond apart, ``DEAF_HOST``): the host streams long
past the cancel budget (0.1 s here), on a fast machine as on a slow one."""
DEAF_HOST = "hang-ack:turn/cancel,slow:1"
"""A host that never acts on ``turn/cancel`` (it never even answers it) and keeps streaming."""


def _answer_index(agent: Agent, request_id: object) -> int:
    return next(
        index
        for index, (direction, message) in enumerate(agent.frames)
        if direction == "in" and message.get("id") == request_id and "method" not in message
    )


def _prompts(agent: Agent, session: str) -> list[tuple[int, object]]:
    """Where in the frames the client sent each ``session/prompt`` of ``session``, and its id."""
    return [
        (index, message["id"])
        for index, (direction, message) in enumerate(agent.frames)
        if direction == "out"
        and message.get("method") == "session/prompt"
        and message.get("params", {}).get("sessionId") == session
    ]


def _updates(agent: Agent, session: str, start: int, end: int) -> list[dict[str, Any]]:
    """The updates of ``session`` the client received between frames ``start`` and ``end``."""
    return [
        message["params"]["update"]
        for direction, message in agent.frames[start:end]
        if direction == "in"
        and message.get("method") == "session/update"
        and message.get("params", {}).get("sessionId") == session
    ]


@pytest.mark.parametrize("version", VERSIONS)
async def test_nothing_of_a_turn_follows_its_answer_when_the_cancel_budget_settles_it(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    world.extra_env.update(MUSE_SIM_FAULTS=DEAF_HOST, MUSE_ACP_CANCEL_TIMEOUT="0.1")
    attempts = 20
    async with running_agent(world) as agent:
        sessions: list[str] = []
        for _ in range(attempts):
            session = await agent.new_session()
            sessions.append(session)
            outcome: list[str] = []

            async def run(session: str = session, outcome: list[str] = outcome) -> None:
                outcome.append((await agent.prompt(session, LATE_STREAM)).stop_reason)

            with anyio.fail_after(WAIT):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run)
                    await agent.client.wait_for(session, "agent_message_chunk")
                    await agent.conn.cancel(session_id=session)
            assert outcome == ["cancelled"]
        # The next prompt on the last session works, and shows its own reply only.
        with anyio.fail_after(WAIT):
            after = await agent.prompt(sessions[-1], "after the cancel")
        assert after.stop_reason == "end_turn"
        late: dict[str, Counter[str]] = {}
        for session in sessions:
            prompts = _prompts(agent, session)
            answered = _answer_index(agent, prompts[0][1])
            until = prompts[1][0] if len(prompts) > 1 else len(agent.frames)
            shown_late = _updates(agent, session, answered + 1, until)
            late[session] = Counter(update["sessionUpdate"] for update in shown_late)
        ((begun, next_id),) = _prompts(agent, sessions[-1])[1:]
        shown = _updates(agent, sessions[-1], begun, _answer_index(agent, next_id))
    assert late == {session: Counter() for session in sessions}
    text = "".join(
        u["content"]["text"] for u in shown if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "after the cancel"
