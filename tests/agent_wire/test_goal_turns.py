"""Goal turns over the wire: the turn Muse wakes for the session goal (``/goal set``, ``edit``,
``resume``) is followed live by the prompt that woke it, Stop interrupts it in Muse (which
pauses the goal), a prompt sent meanwhile waits for it, ``/goal edit`` replaces the objective, and
a load replays it all; so is a turn Muse takes by itself once no prompt is open. muse-sim plays a
goal turn as a turn with no user message that runs the objective's text as its prompt
(``sim:hold`` keeps it running until steered or stopped; ``sim:goal-again`` starts the next part).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import schema

from .harness import WAIT, Agent, ext_request, make_world, running_agent

pytestmark = pytest.mark.anyio

GOAL_VERSIONS = ("1.3.0", "1.4.2", "1.4.4", "1.4.13")
OLD_VERSIONS = ("1.1.1", "1.2.1")
STEERING = schema.ClientCapabilities(field_meta={"muse/steering": 1})
WORKING = "Muse is working on the goal now"


async def _reply(agent: Agent, session: str, text: str, stop: str = "end_turn") -> str:
    """Send ``text`` as a prompt; the agent text it produced (it must end with ``stop``)."""
    before = len(agent.client.text(session))
    with anyio.fail_after(WAIT):
        response = await agent.prompt(session, text)
    assert response.stop_reason == stop
    return agent.client.text(session)[before:]


def _goals(agent: Agent, session: str) -> list[Any]:
    """Every goal announced to the client (None: cleared), in order."""
    return [
        u.field_meta["muse/goal"]["goal"]
        for s, u in agent.client.updates
        if s == session
        and u.session_update == "session_info_update"
        and u.field_meta
        and "muse/goal" in u.field_meta
    ]


def _active_turns(agent: Agent, session: str) -> list[str]:
    """The running turns announced (``muse/activeTurnId``), in order."""
    return [
        u.field_meta["muse/activeTurnId"]
        for s, u in agent.client.updates
        if s == session
        and u.session_update == "session_info_update"
        and u.field_meta
        and isinstance(u.field_meta.get("muse/activeTurnId"), str)
    ]


async def _next_active_turn(agent: Agent, session: str, seen: int) -> str:
    await agent.client.wait_until(lambda: len(_active_turns(agent, session)) > seen)
    return _active_turns(agent, session)[seen]


class Prompt:
    """A prompt running in the background; ``stop`` is its stop reason once answered."""

    def __init__(self, agent: Agent, session: str, text: str, order: list[str]) -> None:
        self.agent, self.session, self.text, self.order = agent, session, text, order
        self.stop: str | None = None

    async def run(self) -> None:
        response = await self.agent.prompt(self.session, self.text)
        self.stop = response.stop_reason
        self.order.append(self.text)


@pytest.mark.parametrize("version", GOAL_VERSIONS)
async def test_a_goal_turn_streams_into_the_prompt_that_woke_it_and_is_replayed(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        set_reply = await _reply(agent, session, "/goal set Green the parser suite")
        edited = await _reply(agent, session, "/goal edit Green every suite")
        await _reply(agent, session, "/goal pause")
        edited_paused = await _reply(agent, session, "/goal edit Only the parser")
        resumed = await _reply(agent, session, "/goal resume")
        live_goals = _goals(agent, session)
    # The goal turn's own output (the simulated model echoes the objective) follows the reply.
    assert set_reply.index("Goal set.") < set_reply.index(WORKING)
    assert set_reply.index(WORKING) < set_reply.rindex("Green the parser suite")
    assert "Goal edited." in edited
    assert "Goal: Green every suite" in edited
    assert edited.index(WORKING) < edited.rindex("Green every suite")
    # A paused goal wakes nothing: the reply is the whole prompt.
    assert "Goal edited." in edited_paused
    assert "Status: paused" in edited_paused
    assert WORKING not in edited_paused
    assert resumed.index(WORKING) < resumed.rindex("Only the parser")
    assert live_goals[-1] == {
        "objective": "Only the parser",
        "status": "active",
        "percentComplete": 0,
    }
    goal_frames = [f for f in world.host_requests() if f["method"].startswith("goal/")]
    assert [f["method"] for f in goal_frames] == [
        "goal/set",
        "goal/edit",
        "goal/pause",
        "goal/edit",
        "goal/resume",
    ]
    assert [f["params"].get("objective") for f in goal_frames[1::2]] == [
        "Green every suite",
        "Only the parser",
    ]
    assert world.host_requests("turn/start") == []  # Muse started every turn itself

    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        replayed = agent.client.text(session)
        replayed_goals = _goals(agent, session)
    for objective in ("Green the parser suite", "Green every suite", "Only the parser"):
        assert objective in replayed
    assert replayed.index("Green every suite") < replayed.rindex("Only the parser")
    assert replayed_goals[-1] == live_goals[-1]


@pytest.mark.parametrize("version", GOAL_VERSIONS)
async def test_stop_cancels_a_goal_turn_and_a_prompt_sent_meanwhile_waits_for_it(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    order: list[str] = []
    async with running_agent(world, capabilities=STEERING) as agent:
        session = await agent.new_session()
        woke = Prompt(agent, session, "/goal set sim:hold\nGreen the suite", order)
        waiting = Prompt(agent, session, "hello", order)
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(woke.run)
                goal_turn = await _next_active_turn(agent, session, 0)
                tasks.start_soon(waiting.run)
                await anyio.wait_all_tasks_blocked()  # the prompt is in the session's line
                assert world.host_requests("turn/start") == []
                steer = {
                    "sessionId": session,
                    "expectedTurnId": goal_turn,
                    "prompt": [{"type": "text", "text": "go on"}],
                }
                assert (await ext_request(agent, "_muse/steer", steer))["status"] == "accepted"
        assert (woke.stop, waiting.stop) == ("end_turn", "end_turn")
        assert order == [woke.text, waiting.text]
        text = agent.client.text(session)
        assert text.index('Steering received: "go on"') < text.rindex("hello")
        assert len(world.host_requests("turn/start")) == 1

        # An edit of the active goal on an idle session wakes a turn: Stop cancels it in Muse.
        stopped = Prompt(agent, session, "/goal edit sim:hold\nKeep at it", order)
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(stopped.run)
                second = await _next_active_turn(agent, session, 2)
                await agent.conn.cancel(session_id=session)
        assert stopped.stop == "cancelled"
        shown = await _reply(agent, session, "/goal")
    [stop] = world.host_requests("turn/interrupt")
    assert stop["params"]["turnId"] == second != goal_turn
    assert "Goal: sim:hold\nKeep at it" in shown
    assert "Status: paused" in shown
    assert _goals(agent, session)[-1]["status"] == "paused"


AGAIN = "Green the suite\nsim:goal-again\nStill greening\nsim:plan\nsim:approve make test\nsim:hold"
"""An objective whose woken turn completes, after which Muse takes another turn by itself: it
makes a plan, asks an approval, then works until it is steered or stopped."""


async def _muse_turn(agent: Agent, session: str) -> tuple[str, str]:
    """Set ``AGAIN`` as the goal; once the prompt has ended, the turn Muse took by itself (its
    id) after the woken one, and the prompt's text."""
    said = await _reply(agent, session, f"/goal set {AGAIN}")
    await agent.client.wait_until(lambda: len(agent.client.permission_requests) == 1)
    return await _next_active_turn(agent, session, 1), said


@pytest.mark.parametrize("version", GOAL_VERSIONS)
async def test_a_turn_muse_takes_by_itself_is_shown_with_no_prompt_open_and_stop_interrupts_it(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=STEERING) as agent:
        session = await agent.new_session()
        own, said = await _muse_turn(agent, session)
        assert "Green the suite" in said
        # Its plan was shown, its approval asked and its tool ran, with no prompt open.
        assert "plan" in agent.client.kinds(session)
        [asked] = agent.client.permission_requests
        assert "make test" in str(asked.tool_call.raw_input)
        await agent.client.wait_until(
            lambda: "simulated run of: make test" in str(agent.raw_updates(session))
        )
        with anyio.fail_after(WAIT):
            await agent.conn.cancel(session_id=session)
            await agent.client.wait_until(lambda: _goals(agent, session)[-1]["status"] == "paused")
        shown = await _reply(agent, session, "/goal")
    assert world.host_requests("turn/start") == []
    [stop] = world.host_requests("turn/interrupt")
    assert stop["params"]["turnId"] == own
    assert world.host_requests("turn/cancel") == []
    assert "Status: paused" in shown


@pytest.mark.parametrize("version", GOAL_VERSIONS)
async def test_a_prompt_sent_while_muse_works_by_itself_waits_and_a_load_replays_both(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    order: list[str] = []
    async with running_agent(world, capabilities=STEERING) as agent:
        session = await agent.new_session()
        own, _ = await _muse_turn(agent, session)
        waiting = Prompt(agent, session, "hello", order)
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(waiting.run)
                await anyio.wait_all_tasks_blocked()  # the prompt is in the session's line
                assert world.host_requests("turn/start") == []
                steer = {
                    "sessionId": session,
                    "expectedTurnId": own,
                    "prompt": [{"type": "text", "text": "go on"}],
                }
                assert (await ext_request(agent, "_muse/steer", steer))["status"] == "accepted"
        assert waiting.stop == "end_turn"
        live = agent.client.text(session)
    assert live.index('Steering received: "go on"') < live.rindex("Still greening")
    assert live.rindex("Still greening") < live.rindex("hello")
    assert len(world.host_requests("turn/start")) == 1

    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        replayed = agent.client.text(session)
    assert replayed.index("Green the suite") < replayed.index("Still greening")
    assert replayed.rindex("Still greening") < replayed.rindex("hello")


@pytest.mark.parametrize("version", OLD_VERSIONS)
@pytest.mark.parametrize("command", ["edit Ship it", f"set {AGAIN}"])
async def test_goal_controls_are_refused_on_older_muse(
    tmp_path: Path, version: str, command: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        refused = await _reply(agent, session, f"/goal {command}")
    assert "Goal controls need Muse 1.3.0 or newer" in refused
    assert f"this Muse is {version}" in refused
    assert [f for f in world.host_requests() if f["method"].startswith("goal/")] == []
    assert world.host_requests("turn/start") == []


ON_RESUME = "Green the suite\nsim:goal-on-resume\nBack at the suite\nsim:approve make test"
"""An objective whose woken turn completes; Muse starts the rest by itself as soon as a new
process resumes the session (right after ``session/resume``): it asks an approval, then ends."""


@pytest.mark.parametrize("version", GOAL_VERSIONS)
async def test_a_turn_muse_starts_as_a_loaded_session_resumes_is_followed_before_the_prompt(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        said = await _reply(agent, session, f"/goal set {ON_RESUME}")
    assert said.index(WORKING) < said.rindex("Green the suite")
    assert world.host_requests("session/resume") == []

    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
        # The prompt's host resumes the session, and Muse starts its goal's turn at once: the
        # prompt shows it and asks its approval, then runs its own turn once Muse's has ended.
        reply = await _reply(agent, session, "hello")
        [asked] = agent.client.permission_requests
        shown = str(agent.raw_updates(session))
    assert "make test" in str(asked.tool_call.raw_input)
    assert reply.index("Back at the suite") < reply.rindex("hello")
    assert shown.index("simulated run of: make test") < shown.rindex("'hello'")
    assert len(world.host_requests("session/resume")) == 1
    assert len(world.host_requests("turn/start")) == 1


ON_PROMPT = "Green the suite\nsim:goal-on-prompt\nBack at the suite\nsim:approve make test"
"""An objective whose woken turn completes; as a prompt's ``turn/start`` reaches the idle
session, Muse first starts the rest by itself (it asks an approval) and queues the prompt's."""


@pytest.mark.parametrize("version", GOAL_VERSIONS)
async def test_a_turn_muse_starts_as_a_prompt_reaches_it_is_followed_before_the_prompt(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=STEERING) as agent:
        session = await agent.new_session()
        said = await _reply(agent, session, f"/goal set {ON_PROMPT}")
        assert said.index(WORKING) < said.rindex("Green the suite")
        # Muse queues the prompt's turn behind one it starts by itself: the prompt shows that
        # turn and asks its approval, then runs its own turn once Muse's has ended.
        reply = await _reply(agent, session, "hello")
        [asked] = agent.client.permission_requests
        shown = str(agent.raw_updates(session))
        running = _active_turns(agent, session)
    assert "make test" in str(asked.tool_call.raw_input)
    assert reply.index("Back at the suite") < reply.rindex("hello")
    assert shown.index("simulated run of: make test") < shown.rindex("'hello'")
    [decided] = world.host_requests("approval/decide")
    assert decided["params"]["sessionId"] == session
    [started] = world.host_requests("turn/start")
    assert started["params"]["sessionId"] == session
    # Once Muse's turn ended, the prompt's is announced as the running one again (to steer).
    assert running[-1] == started["params"]["commandId"] != running[-2]


@pytest.mark.parametrize("version", GOAL_VERSIONS)
async def test_stop_cancels_both_a_turn_muse_runs_ahead_of_the_prompt_and_the_prompts(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    held = "Green the suite\nsim:goal-on-prompt\nBack at the suite\nsim:hold"
    async with running_agent(world, capabilities=STEERING) as agent:
        session = await agent.new_session()
        await _reply(agent, session, f"/goal set {held}")
        waiting = Prompt(agent, session, "hello", [])
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(waiting.run)
                # The prompt's queued turn is announced at its acknowledgement, then Muse's own.
                lead = await _next_active_turn(agent, session, 2)
                await agent.conn.cancel(session_id=session)
            await agent.client.wait_until(lambda: _goals(agent, session)[-1]["status"] == "paused")
        assert waiting.stop == "cancelled"
        # Muse confirmed both stops (the queued turn's by dropping it): the host is kept.
        await _reply(agent, session, "again")
    assert world.host_requests("session/resume") == []
    [start, _] = world.host_requests("turn/start")
    [stop] = world.host_requests("turn/interrupt")
    assert stop["params"]["turnId"] == lead != start["params"]["commandId"]
    [dropped] = world.host_requests("turn/cancel")
    assert dropped["params"]["turnId"] == start["params"]["commandId"]
