"""Steering over the wire: corrections reach the running turn, in order, and never start one.

A ``sim:hold`` prompt keeps its turn running until it is steered or cancelled; the simulated
model answers each correction with a message quoting it and ends the turn after a correction
that does not itself say ``sim:hold``. Every test checks that the host saw exactly one
``turn/start`` per prompt and only the ``turn/steer`` requests it expects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from .harness import WAIT, Agent, World, ext_request, running_agent

pytestmark = pytest.mark.anyio

STEERING = schema.ClientCapabilities(
    field_meta={"muse/steering": 1, "steering": {"supported": True}}
)
ACTIVE_TURN = "muse/activeTurnId"
PNG = "iVBORw0KGgo="


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _muse_steer(session: str, turn: str, text: str) -> dict[str, Any]:
    return {"sessionId": session, "expectedTurnId": turn, "prompt": _text(text)}


async def _announcement(agent: Agent, session: str, *, running: bool) -> str | None:
    """The first ``muse/activeTurnId`` the agent announced for a running turn (a turn id) or
    for its end (null)."""
    count = 1
    with anyio.fail_after(WAIT):
        while True:
            update = await agent.client.wait_for(session, "session_info_update", count)
            meta = update.field_meta or {}
            if ACTIVE_TURN in meta and isinstance(meta[ACTIVE_TURN], str) == running:
                turn: str | None = meta[ACTIVE_TURN]
                return turn
            count += 1


async def _active_turn(agent: Agent, session: str) -> str:
    turn = await _announcement(agent, session, running=True)
    assert turn is not None
    return turn


def _announced_turns(agent: Agent, session: str) -> list[str | None]:
    return [
        u.field_meta[ACTIVE_TURN]
        for s, u in agent.client.updates
        if s == session
        and u.session_update == "session_info_update"
        and u.field_meta
        and ACTIVE_TURN in u.field_meta
    ]


async def _refused(call: Awaitable[Any]) -> acp.RequestError:
    with pytest.raises(acp.RequestError) as raised:
        await call
    return raised.value


def _steer_inputs(world: World) -> list[list[dict[str, Any]]]:
    return [frame["params"]["input"] for frame in world.host_requests("turn/steer")]


class HeldPrompt:
    """A ``sim:hold`` prompt running in the background; ``outcome`` is its stop reason or
    error code once it ended."""

    def __init__(self, agent: Agent, session: str, text: str = "sim:hold") -> None:
        self.agent = agent
        self.session = session
        self.text = text
        self.outcome: str | int | None = None

    async def run(self) -> None:
        try:
            response = await self.agent.prompt(self.session, self.text)
            self.outcome = response.stop_reason
        except acp.RequestError as error:
            self.outcome = error.code


async def _with_held_turn(
    world: World,
    body: Callable[[Agent, str, str], Awaitable[None]],
    capabilities: schema.ClientCapabilities = STEERING,
) -> HeldPrompt:
    """Run ``body(agent, session, turn_id)`` while a held prompt runs; return the prompt."""
    async with running_agent(world, capabilities=capabilities) as agent:
        session = await agent.new_session()
        held = HeldPrompt(agent, session)
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(held.run)
                await body(agent, session, await _active_turn(agent, session))
        assert await _announcement(agent, session, running=False) is None, "the end is announced"
        assert _announced_turns(agent, session)[-1] is None
    return held


async def test_muse_steer_reaches_the_announced_turn_and_names_it(world: World) -> None:
    answers: list[dict[str, Any]] = []

    async def body(agent: Agent, session: str, turn: str) -> None:
        answers.append(
            await ext_request(agent, "_muse/steer", _muse_steer(session, turn, "use tabs"))
        )

    held = await _with_held_turn(world, body)
    assert answers == [{"status": "accepted", "turnId": answers[0]["turnId"]}]
    assert held.outcome == "end_turn"
    assert 'Steering received: "use tabs"' in held.agent.client.text(held.session)
    steers = world.host_requests("turn/steer")
    assert [f["params"]["expectedTurnId"] for f in steers] == [answers[0]["turnId"]]
    assert len(world.host_requests("turn/start")) == 1


async def test_compatible_steering_reaches_the_turn_running_at_arrival(world: World) -> None:
    answers: list[dict[str, Any]] = []
    turns: list[str] = []

    async def body(agent: Agent, session: str, turn: str) -> None:
        turns.append(turn)
        params = {"sessionId": session, "prompt": _text("be brief")}
        answers.append(await ext_request(agent, "_session/steering", params))

    held = await _with_held_turn(world, body)
    assert answers == [{"outcome": "injected"}]
    assert held.outcome == "end_turn"
    assert [f["params"]["expectedTurnId"] for f in world.host_requests("turn/steer")] == turns
    assert _steer_inputs(world) == [[{"type": "text", "text": "be brief"}]]
    assert len(world.host_requests("turn/start")) == 1


async def test_compatible_steering_may_name_the_announced_turn(world: World) -> None:
    async def body(agent: Agent, session: str, turn: str) -> None:
        params = {"sessionId": session, "expectedTurnId": turn, "prompt": _text("go on")}
        assert await ext_request(agent, "_session/steering", params) == {"outcome": "injected"}

    held = await _with_held_turn(world, body)
    assert held.outcome == "end_turn"
    assert len(world.host_requests("turn/steer")) == 1


async def test_corrections_reach_the_host_in_the_order_they_were_sent(world: World) -> None:
    answers: dict[str, dict[str, Any]] = {}

    async def steer(agent: Agent, session: str, turn: str, text: str) -> None:
        answers[text] = await ext_request(agent, "_muse/steer", _muse_steer(session, turn, text))

    async def body(agent: Agent, session: str, turn: str) -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(steer, agent, session, turn, "first\nsim:hold")
            await anyio.wait_all_tasks_blocked()  # written first, so admitted first
            tasks.start_soon(steer, agent, session, turn, "second")

    held = await _with_held_turn(world, body)
    assert {text: a["status"] for text, a in answers.items()} == {
        "first\nsim:hold": "accepted",
        "second": "accepted",
    }
    assert _steer_inputs(world) == [_text("first\nsim:hold"), _text("second")]
    assert held.outcome == "end_turn"
    text = held.agent.client.text(held.session)
    assert text.index('"first') < text.index('"second"')
    assert len(world.host_requests("turn/start")) == 1


async def test_a_correction_queued_behind_a_turn_that_ended_fails_as_stale(world: World) -> None:
    # Muse never acknowledges a correction here, so the first one holds the line until the
    # submit budget runs out, and the turn is cancelled while the second one waits.
    world.extra_env.update(MUSE_SIM_FAULTS="hang-ack:turn/steer", MUSE_ACP_SUBMIT_TIMEOUT="2")
    refusals: dict[str, acp.RequestError] = {}
    turns: list[str] = []

    async def steer(agent: Agent, session: str, turn: str, text: str) -> None:
        params = _muse_steer(session, turn, text)
        refusals[text] = await _refused(ext_request(agent, "_muse/steer", params))

    async def body(agent: Agent, session: str, turn: str) -> None:
        turns.append(turn)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(steer, agent, session, turn, "held by Muse")
            tasks.start_soon(steer, agent, session, turn, "queued")
            await anyio.wait_all_tasks_blocked()  # both were written and await their answers
            # Answered only after the agent admitted both corrections above, in arrival order.
            wrong = _muse_steer(session, "another-turn", "misdirected")
            assert (await _refused(ext_request(agent, "_muse/steer", wrong))).code == -32600
            await agent.conn.cancel(session_id=session)

    held = await _with_held_turn(world, body)
    assert held.outcome == "cancelled"
    assert refusals["held by Muse"].code == -32603, "no acknowledgement within the budget"
    stale = refusals["queued"]
    assert (stale.code, stale.data) == (-32600, {"turnId": turns[0]}), "refused when it ran"
    assert _steer_inputs(world) == [_text("held by Muse")], "the stale one was never sent"
    assert len(world.host_requests("turn/start")) == 1


async def test_steering_an_idle_session_fails_unless_a_prompt_is_asked_for(world: World) -> None:
    async with running_agent(world, capabilities=STEERING) as agent:
        session = await agent.new_session()
        compatible = {"sessionId": session, "prompt": _text("anyone?")}
        for _ in range(2):
            muse = _muse_steer(session, "turn-1", "anyone?")
            assert (await _refused(ext_request(agent, "_muse/steer", muse))).code == -32600
            refused = await _refused(ext_request(agent, "_session/steering", compatible))
            assert refused.code == -32600
            asking = {**compatible, "_meta": {"steering": {"idleBehavior": "promptRequired"}}}
            assert await ext_request(agent, "_session/steering", asking) == {
                "outcome": "promptRequired",
                "reason": "noRunningTurn",
            }
            with anyio.fail_after(WAIT):
                await agent.prompt(session, "a finished turn leaves the session idle")
    assert world.host_requests("turn/steer") == []
    assert len(world.host_requests("turn/start")) == 2


async def test_a_wrong_expected_turn_is_refused_and_names_the_running_one(world: World) -> None:
    async def body(agent: Agent, session: str, turn: str) -> None:
        params = _muse_steer(session, "not-the-turn", "hello")
        refused = await _refused(ext_request(agent, "_muse/steer", params))
        assert (refused.code, refused.data) == (-32600, {"activeTurnId": turn})
        compatible = {"sessionId": session, "expectedTurnId": "not-the-turn", "prompt": _text("x")}
        assert (await _refused(ext_request(agent, "_session/steering", compatible))).code == -32600
        await agent.conn.cancel(session_id=session)

    held = await _with_held_turn(world, body)
    assert held.outcome == "cancelled"
    assert world.host_requests("turn/steer") == []
    assert len(world.host_requests("turn/start")) == 1


async def test_steering_after_a_cancel_is_refused(world: World) -> None:
    async def body(agent: Agent, session: str, turn: str) -> None:
        await agent.conn.cancel(session_id=session)
        params = _muse_steer(session, turn, "too late")
        assert (await _refused(ext_request(agent, "_muse/steer", params))).code == -32600

    held = await _with_held_turn(world, body)
    assert held.outcome == "cancelled"
    assert world.host_requests("turn/steer") == []
    assert len(world.host_requests("turn/start")) == 1


async def test_steering_a_closed_session_is_not_found(world: World) -> None:
    async def body(agent: Agent, session: str, turn: str) -> None:
        await agent.conn.close_session(session_id=session)
        params = _muse_steer(session, turn, "anyone?")
        assert (await _refused(ext_request(agent, "_muse/steer", params))).code == -32002
        compatible = {"sessionId": session, "prompt": _text("anyone?")}
        assert (await _refused(ext_request(agent, "_session/steering", compatible))).code == -32002

    await _with_held_turn(world, body)
    assert world.host_requests("turn/steer") == []
    assert len(world.host_requests("turn/start")) == 1


async def test_steering_that_was_not_negotiated_is_refused(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        held = HeldPrompt(agent, session, "sim:plan\nsim:hold")
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(held.run)
                await agent.client.wait_for(session, "plan")
                params = _muse_steer(session, "turn-1", "hello")
                assert (await _refused(ext_request(agent, "_muse/steer", params))).code == -32600
                compatible = {"sessionId": session, "prompt": _text("hello")}
                refused = await _refused(ext_request(agent, "_session/steering", compatible))
                assert refused.code == -32600
                await agent.conn.cancel(session_id=session)
        assert _announced_turns(agent, session) == [], "no turn id is announced to this client"
    assert held.outcome == "cancelled"
    assert world.host_requests("turn/steer") == []
    assert len(world.host_requests("turn/start")) == 1


async def test_an_image_in_a_correction_reaches_the_host_as_an_image(world: World) -> None:
    async def body(agent: Agent, session: str, turn: str) -> None:
        prompt = [*_text("look:"), {"type": "image", "mimeType": "image/png", "data": PNG}]
        params = {"sessionId": session, "expectedTurnId": turn, "prompt": prompt}
        assert (await ext_request(agent, "_muse/steer", params))["status"] == "accepted"

    held = await _with_held_turn(world, body)
    assert held.outcome == "end_turn"
    assert _steer_inputs(world) == [
        [
            {"type": "text", "text": "look:"},
            {"type": "image", "base64Data": PNG, "mediaType": "image/png"},
        ]
    ]
    assert len(world.host_requests("turn/start")) == 1
