"""Cancellation always settles the prompt, and never leaks one turn's output into the next."""

from __future__ import annotations

import anyio
import pytest

from .harness import WAIT, World, running_agent

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
