"""Prompts sent while a turn runs wait their turn: answered in order, each with its own turn's
text; ``session/cancel`` answers every one of them ``cancelled``; ``$/cancel_request`` on a
queued one removes only it. On every Muse version the simulator plays.

The first turn is held open by the client itself (a permission it has not answered yet, or
``sim:hold``), so the queued prompts reach the agent while it runs, whatever the machine's speed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema
from acp.connection import StreamDirection, StreamEvent
from anyio.abc import TaskGroup

from .harness import WAIT, Agent, ext_request, make_world, running_agent
from .test_exec_backend import exec_runs
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

STEERING = schema.ClientCapabilities(field_meta={"muse/steering": 1})
QUEUED = ("second prompt", "third prompt", "fourth prompt")
"""Three prompts sent back to back while the first one's turn runs."""


class Prompts:
    """The session's prompts as sent and answered: each one's answer (a stop reason or an
    error code), in the order the answers came, and a wait for its frame to be written."""

    def __init__(self, agent: Agent, session: str) -> None:
        self.agent = agent
        self.session = session
        self.answers: list[tuple[str, str | int]] = []
        self.answered: dict[str, anyio.Event] = {}
        self._written = 0
        self._changed = anyio.Event()
        agent.conn._conn.add_observer(self._observe)

    def _observe(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction == StreamDirection.OUTGOING and message.get("method") == (
            "session/prompt"
        ):
            self._written += 1
            self._changed.set()
            self._changed = anyio.Event()

    def ids(self) -> dict[str, object]:
        """Each prompt's request id, by its text."""
        return {
            message["params"]["prompt"][0]["text"].split("\n")[0]: message["id"]
            for direction, message in self.agent.frames
            if direction == "out" and message.get("method") == "session/prompt"
        }

    async def _run(self, text: str) -> None:
        label = text.split("\n")[0]
        try:
            response = await self.agent.prompt(self.session, text)
            self.answers.append((label, response.stop_reason))
        except acp.RequestError as error:
            self.answers.append((label, error.code))
        self.answered[label].set()

    async def send(self, tasks: TaskGroup, *texts: str) -> None:
        """Send ``texts`` one after another, each once the one before it was written."""
        for text in texts:
            self.answered[text.split("\n")[0]] = anyio.Event()
            wanted = self._written + 1
            tasks.start_soon(self._run, text)
            while self._written < wanted:
                await self._changed.wait()


def _held_permission(agent: Agent) -> tuple[anyio.Event, anyio.Event]:
    """Hold the first permission request open: (asked, release)."""
    asked, release = anyio.Event(), anyio.Event()

    async def hold() -> None:
        asked.set()
        await release.wait()

    agent.client.on_permission = hold
    return asked, release


def _replies(agent: Agent, session: str, prompts: Prompts) -> list[str]:
    """The agent's message text of each turn: what streamed between consecutive answers."""
    ids = set(prompts.ids().values())
    replies, text = [], ""
    for direction, message in agent.frames:
        if direction != "in":
            continue
        if message.get("id") in ids and "method" not in message:
            replies.append(text)
            text = ""
        elif message.get("method") == "session/update":
            update = message["params"]["update"]
            if message["params"]["sessionId"] == session and update["sessionUpdate"] == (
                "agent_message_chunk"
            ):
                text += update["content"]["text"]
    return replies


def _active_turn(agent: Agent) -> str | None:
    """The first running turn the agent announced (``muse/activeTurnId``), if any yet."""
    announced = (
        (update.field_meta or {}).get("muse/activeTurnId")
        for _, update in agent.client.updates
        if update.session_update == "session_info_update"
    )
    return next((turn for turn in announced if isinstance(turn, str)), None)


def _started(agent: Agent) -> list[str]:
    """The first text line of every turn Muse was asked to start."""
    return [
        start["params"]["input"][0]["text"].split("\n")[0]
        for start in agent.world.host_requests("turn/start")
    ]


async def _with_a_held_turn(
    tmp_path: Path,
    version: str,
    steps: Callable[[Agent, Prompts], Awaitable[None]],
    capabilities: schema.ClientCapabilities | None = None,
) -> tuple[Agent, Prompts]:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=capabilities) as agent:
        session = await agent.new_session()
        prompts = Prompts(agent, session)
        with anyio.fail_after(WAIT):
            await steps(agent, prompts)
    return agent, prompts


@pytest.mark.parametrize("version", VERSIONS)
async def test_prompts_sent_while_a_turn_runs_are_answered_in_order_with_their_own_text(
    tmp_path: Path, version: str
) -> None:
    async def steps(agent: Agent, prompts: Prompts) -> None:
        asked, release = _held_permission(agent)
        async with anyio.create_task_group() as tasks:
            await prompts.send(tasks, "first prompt\nsim:approve echo one")
            await asked.wait()
            await prompts.send(tasks, *QUEUED)
            assert prompts.answers == [], "a queued prompt waits, it is not refused"
            release.set()

    agent, prompts = await _with_a_held_turn(tmp_path, version, steps)
    order = ["first prompt", *QUEUED]
    assert prompts.answers == [(text, "end_turn") for text in order]
    assert _replies(agent, prompts.session, prompts) == order
    assert _started(agent) == order


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_cancel_answers_the_running_prompt_and_every_queued_one_cancelled(
    tmp_path: Path, version: str
) -> None:
    async def steps(agent: Agent, prompts: Prompts) -> None:
        async with anyio.create_task_group() as tasks:
            await prompts.send(tasks, "first prompt\nsim:plan\nsim:hold")
            await agent.client.wait_for(prompts.session, "plan")
            await prompts.send(tasks, *QUEUED)
            assert prompts.answers == []
            await agent.conn.cancel(session_id=prompts.session)
            # Sent while the cancel settles: it waits for the cancelled turn, then runs.
            await prompts.send(tasks, "after the cancel")

    agent, prompts = await _with_a_held_turn(tmp_path, version, steps)
    answers: dict[str, Any] = dict(prompts.answers)
    assert answers == {
        "first prompt": "cancelled",
        **dict.fromkeys(QUEUED, "cancelled"),
        "after the cancel": "end_turn",
    }
    assert prompts.answers[-1] == ("after the cancel", "end_turn")
    assert _started(agent) == ["first prompt", "after the cancel"], "queued ones never ran"
    assert _replies(agent, prompts.session, prompts)[-1] == "after the cancel"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_cancel_request_on_a_queued_prompt_removes_only_it(
    tmp_path: Path, version: str
) -> None:
    withdrawn = QUEUED[1]

    async def steps(agent: Agent, prompts: Prompts) -> None:
        asked, release = _held_permission(agent)
        async with anyio.create_task_group() as tasks:
            await prompts.send(tasks, "first prompt\nsim:approve echo one")
            await asked.wait()
            await prompts.send(tasks, *QUEUED)
            cancel = {"requestId": prompts.ids()[withdrawn]}
            await agent.conn._conn.send_notification("$/cancel_request", cancel)
            # Answered at once, while the first turn still waits for its permission.
            await prompts.answered[withdrawn].wait()
            release.set()

    agent, prompts = await _with_a_held_turn(tmp_path, version, steps)
    kept = ["first prompt", QUEUED[0], QUEUED[2]]
    assert prompts.answers == [(withdrawn, -32800), *((text, "end_turn") for text in kept)]
    assert _started(agent) == kept
    assert _replies(agent, prompts.session, prompts) == [
        "",  # the withdrawn prompt's answer: nothing streamed before it
        "first prompt",
        QUEUED[0],
        QUEUED[2],
    ]


@pytest.mark.parametrize("version", VERSIONS)
async def test_steering_reaches_the_running_turn_while_prompts_wait(
    tmp_path: Path, version: str
) -> None:
    steered: list[dict[str, Any]] = []

    async def steps(agent: Agent, prompts: Prompts) -> None:
        async with anyio.create_task_group() as tasks:
            await prompts.send(tasks, "first prompt\nsim:hold")
            await agent.client.wait_until(lambda: _active_turn(agent) is not None)
            turn = _active_turn(agent)
            await prompts.send(tasks, *QUEUED[:2])
            correction = {
                "sessionId": prompts.session,
                "expectedTurnId": turn,
                "prompt": [{"type": "text", "text": "go on"}],
            }
            steered.append({"turn": turn, **await ext_request(agent, "_muse/steer", correction)})

    agent, prompts = await _with_a_held_turn(tmp_path, version, steps, STEERING)
    [answer] = steered
    assert answer == {"turn": answer["turn"], "status": "accepted", "turnId": answer["turn"]}
    [steer] = agent.world.host_requests("turn/steer")
    assert steer["params"]["expectedTurnId"] == answer["turn"]
    order = ["first prompt", *QUEUED[:2]]
    assert prompts.answers == [(text, "end_turn") for text in order]
    assert _started(agent) == order


async def test_the_exec_backend_queues_prompts_too(tmp_path: Path) -> None:
    async def steps(agent: Agent, prompts: Prompts) -> None:
        async with anyio.create_task_group() as tasks:
            await prompts.send(tasks, "first prompt\nsim:stream 1\nsim:hold")
            await agent.client.wait_for(prompts.session, "agent_message_chunk")
            await prompts.send(tasks, *QUEUED)
            await agent.conn.cancel(session_id=prompts.session)
        async with anyio.create_task_group() as tasks:
            await prompts.send(tasks, "after the cancel")

    agent, prompts = await _with_a_held_turn(tmp_path, "0.2.1", steps)  # exec, no serve
    assert dict(prompts.answers) == {
        "first prompt": "cancelled",
        **dict.fromkeys(QUEUED, "cancelled"),
        "after the cancel": "end_turn",
    }
    runs = exec_runs(agent.world)
    assert [run["prompt"].split("\n")[0] for run in runs] == ["first prompt", "after the cancel"]
