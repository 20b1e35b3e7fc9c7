"""Sixty-four sessions at once in one ``muse-acp serve``: nothing hangs, leaks or crosses over.

Every session runs a seeded random plan of prompts, strictly one after another, while all
sessions run concurrently against slow simulated hosts: prompts that complete, prompts
cancelled mid-stream, prompts steered while they hold, sessions closed while a prompt runs, and
sessions closed mid-turn then loaded again and prompted at once (its new host must not race the
old one for Muse's session lease). Every prompt text and correction is made of words unique to
it, so the test can check that each completed turn streamed exactly the host's reply (every
delta once, in order), that a cancelled turn streamed a prefix of it, that no turn ever shows
another turn's words, and that no delta of a turn arrives after its prompt was answered. Once
every session is idle, every host must be gone and the files held open back where they started.
The agent and its hosts run in this process (the claim is about concurrency in the agent, and
what a process leaves behind is checked by the host-fault and lifecycle tests), so the files
are this process's.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import anyio
import pytest
from acp import schema

from tests.agent_wire.harness import Agent, ext_request
from tests.robust.faults_harness import (
    MARGIN,
    Budgets,
    Stopwatch,
    announced_turn,
    fault_world,
    wait_until,
)
from tests.robust.procs import open_fds, require_proc

pytestmark = pytest.mark.anyio

SESSIONS: Final = 64
PROMPTS: Final = (2, 3)
"""Each session sends between this many prompts (both included)."""
SEED: Final = 20_261_130
PROMPT_BOUND: Final = 120.0
"""Seconds one prompt may take, its host's start included, before it counts as hung: sixty-four
hosts starting on two cores take their turns (a few at a time), about half a minute in all."""
TOTAL_BOUND: Final = 300.0
BUDGETS: Final = Budgets(startup=120.0, submit=30.0, cancel=3.0, read=30.0, idle=2.0)
SLOW_MS: Final = 15
"""Simulated model latency before every host event, so that cancels land mid-stream."""
STEERING: Final = schema.ClientCapabilities(field_meta={"muse/steering": 1})
STEERED: Final = 'Steering received: "{}"'
"""How the simulated model acknowledges a correction before it goes on."""
EXPECTED_STOPS: Final = {
    "complete": frozenset({"end_turn"}),
    "steer": frozenset({"end_turn"}),
    "cancel": frozenset({"cancelled", "end_turn"}),  # a fast turn may finish before the cancel
    "close": frozenset({"cancelled"}),
    "reopen": frozenset({"cancelled"}),
}

Kind = Literal["complete", "cancel", "steer", "close", "reopen"]


@dataclass
class Turn:
    """One prompt of a plan, and what became of it."""

    kind: Kind
    text: str
    correction: str = ""
    cancel_after: int = 0
    """For a cancel: how many reply chunks to wait for before cancelling."""
    stop: str | None = None
    """The stop reason, or "hung" when a bounded wait ran out."""
    streamed: str = ""
    waiting: str = "the prompt to start"
    """What the turn waited for last, to say where a hung turn hung."""
    answered_at: int = 0
    """How many frames the client had read when the prompt was answered."""
    next_at: int | None = None
    """How many frames it had read when the session's next activity began (None: none did)."""
    reopened: str | None = None
    """For a reopen: the stop reason of the prompt sent right after loading the session."""

    @property
    def prompt(self) -> str:
        return self.text if self.kind in ("complete", "cancel") else f"sim:hold\n{self.text}"

    @property
    def reply(self) -> str:
        """Everything the host says in this turn when nothing stops it."""
        if self.kind == "steer":
            return STEERED.format(self.correction) + self.text
        return self.text

    @property
    def words(self) -> set[str]:
        return set(self.text.split()) | set(self.correction.split())


@dataclass
class Plan:
    index: int
    turns: list[Turn] = field(default_factory=list)
    session: str = ""

    def where(self, number: int) -> str:
        return f"session {self.index} prompt {number} ({self.turns[number].kind})"


def make_plan(index: int, rng: random.Random) -> Plan:
    plan = Plan(index)
    count = rng.randint(*PROMPTS)
    for number in range(count):
        words = " ".join(f"s{index:02d}p{number}w{k}" for k in range(6))
        kind: Kind = rng.choice(("complete", "complete", "cancel", "steer"))
        if number == count - 1 and rng.random() < 0.25:
            kind = "close"
        elif rng.random() < 0.12:
            kind = "reopen"
        turn = Turn(kind, words)
        if kind == "steer":
            turn.correction = " ".join(f"s{index:02d}p{number}c{k}" for k in range(3))
        elif kind == "cancel":
            turn.cancel_after = rng.randint(0, 2)
        plan.turns.append(turn)
    return plan


def _streamed(agent: Agent, session: str, frames: slice) -> str:
    """The agent message text ``session`` received in the raw ``frames`` (arrival order)."""
    text = []
    for direction, message in agent.frames[frames]:
        params = message.get("params")
        if (
            direction == "in"
            and message.get("method") == "session/update"
            and isinstance(params, dict)
            and params.get("sessionId") == session
        ):
            update = params["update"]
            if update.get("sessionUpdate") == "agent_message_chunk":
                text.append(update["content"].get("text", ""))
    return "".join(text)


async def _intervene(agent: Agent, session: str, turn: Turn) -> None:
    """What the client does while ``turn`` runs: cancel, steer or close, per the plan."""
    if turn.kind == "complete":
        return
    chunks = agent.client.kinds(session).count("agent_message_chunk")
    turn.waiting = "the running turn's announcement"
    seen = agent.client.kinds(session).count("session_info_update")
    while True:
        try:
            turn_id = await announced_turn(agent, session, seen)
            break
        except TimeoutError:
            continue  # its host may still wait its turn to start: PROMPT_BOUND ends this

    if turn.kind == "cancel":
        if turn.cancel_after:
            turn.waiting = f"reply chunk {turn.cancel_after}"
            await agent.client.wait_for(session, "agent_message_chunk", chunks + turn.cancel_after)
        await agent.conn.cancel(session_id=session)
    elif turn.kind == "steer":
        turn.waiting = "the answer to the correction"
        correction = [{"type": "text", "text": turn.correction}]
        params = {"sessionId": session, "expectedTurnId": turn_id, "prompt": correction}
        answer = await ext_request(agent, "_muse/steer", params)
        assert answer == {"status": "accepted", "turnId": turn_id}
    else:
        await agent.conn.close_session(session_id=session)


async def _reopen(agent: Agent, session: str, turn: Turn) -> None:
    """Load the session closed mid-turn, and prompt at once: the new host must get the lease."""
    turn.waiting = "the load after the close"
    await agent.conn.load_session(
        session_id=session, cwd=str(agent.world.workspace), mcp_servers=[]
    )
    turn.waiting = "the prompt after the load"
    turn.reopened = (await agent.prompt(session, "after the reload")).stop_reason


async def _play(agent: Agent, session: str, turn: Turn) -> None:
    start = len(agent.frames)

    async def prompt() -> None:
        turn.stop = (await agent.prompt(session, turn.prompt)).stop_reason

    try:
        with anyio.move_on_after(PROMPT_BOUND):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(prompt)
                await _intervene(agent, session, turn)
                turn.waiting = "the prompt's answer"
    except* TimeoutError:
        pass  # a bounded wait of the client ran out: the turn hung, as recorded below
    if turn.stop is None:
        turn.stop = "hung"
        return
    turn.answered_at = len(agent.frames)
    turn.streamed = _streamed(agent, session, slice(start, turn.answered_at))
    if turn.kind == "reopen":
        turn.next_at = len(agent.frames)
        with anyio.move_on_after(PROMPT_BOUND):
            await _reopen(agent, session, turn)


async def _drive(agent: Agent, plan: Plan) -> None:
    plan.session = session = await agent.new_session()
    # The announcements counted in ``_intervene`` are this session's, so one prompt at a time.
    previous: Turn | None = None
    for turn in plan.turns:
        if previous is not None:
            previous.next_at = len(agent.frames)
        await _play(agent, session, turn)
        if turn.stop == "hung" or turn.kind == "reopen":
            return
        previous = turn


def _late(agent: Agent, plan: Plan, turn: Turn) -> int:
    """Reply chunks of the turn's session that arrived after its answer and before the
    session's next activity (or before now)."""
    end = turn.next_at if turn.next_at is not None else len(agent.frames)
    return sum(
        1
        for direction, message in agent.frames[turn.answered_at : end]
        if direction == "in"
        and message.get("method") == "session/update"
        and message.get("params", {}).get("sessionId") == plan.session
        and message["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    )


def _check(agent: Agent, plan: Plan, everyone: set[str]) -> None:
    for number, turn in enumerate(plan.turns):
        where = plan.where(number)
        assert turn.stop in EXPECTED_STOPS[turn.kind], f"{where}: stopped {turn.stop}"
        assert _late(agent, plan, turn) == 0, f"{where}: reply chunks arrived after its answer"
        if turn.kind == "reopen":
            assert turn.reopened == "end_turn", f"{where}: after the load: {turn.reopened}"
            break
        if turn.stop == "end_turn":
            assert turn.streamed == turn.reply, f"{where}: streamed {turn.streamed!r}"
        else:
            assert turn.reply.startswith(turn.streamed), f"{where}: streamed {turn.streamed!r}"
        foreign = (set(turn.streamed.replace('"', " ").split()) & everyone) - turn.words
        assert not foreign, f"{where}: words of other turns leaked in: {sorted(foreign)}"


async def test_sixty_four_busy_sessions_settle_every_prompt_exactly_and_leave_nothing_behind(
    tmp_path: Path,
) -> None:
    require_proc()
    faulty = fault_world(tmp_path, BUDGETS)
    launcher = faulty.launcher
    assert launcher is not None
    faulty.world.extra_env["MUSE_SIM_FAULTS"] = f"slow:{SLOW_MS}"
    rng = random.Random(SEED)
    plans = [make_plan(index, rng) for index in range(SESSIONS)]
    everyone = {word for plan in plans for turn in plan.turns for word in turn.words}
    assert {turn.kind for plan in plans for turn in plan.turns} == set(EXPECTED_STOPS)
    watch = Stopwatch()
    async with faulty.agent(STEERING) as agent:
        assert launcher.served == [], "the agent runs no host before its first prompt"
        fds = open_fds(os.getpid())
        with anyio.fail_after(TOTAL_BOUND):
            async with anyio.create_task_group() as tasks:
                for plan in plans:
                    tasks.start_soon(_drive, agent, plan)
        hung = [
            f"{plan.where(number)} waiting for {turn.waiting}"
            for plan in plans
            for number, turn in enumerate(plan.turns)
            if turn.stop == "hung"
        ]
        assert not hung, f"prompts hung: {hung}\n{faulty.world.stderr_text()[-3000:]}"
        # Idle hosts expire and closed sessions' hosts are closing: wait for both.
        await wait_until(lambda: not faulty.left(), BUDGETS.idle + 2 * MARGIN, faulty.describe)
        # Nothing the load opened is left open. Fewer than before is no leak: what the agent's
        # start still had open as the count was taken (a probe of the executable, a file it was
        # reading) may have closed since, on a busy machine.
        await wait_until(
            lambda: open_fds(os.getpid()) <= fds,
            MARGIN,
            lambda: f"{open_fds(os.getpid())} files are open, {fds} before the load",
        )
        for plan in plans:
            _check(agent, plan, everyone)
    await faulty.all_exited(MARGIN)
    reopened = sum(1 for plan in plans for turn in plan.turns if turn.reopened is not None)
    assert reopened, "some session was loaded again after its close"
    # Every session ran its own host, and each reload a new one.
    assert len(launcher.served) >= SESSIONS + reopened, len(launcher.served)
    assert watch.elapsed < TOTAL_BOUND


async def test_a_correction_answered_before_the_turn_reaches_its_hold_releases_it(
    tmp_path: Path,
) -> None:
    # Found under load: a correction that reached a slow host before its turn got to
    # ``sim:hold`` was answered between steps, and the hold then waited for another forever.
    faulty = fault_world(tmp_path)
    async with faulty.agent(STEERING) as agent:
        session = await agent.new_session()
        answers: list[dict[str, Any]] = []

        async def steer_while_the_approval_waits() -> None:
            turn_id = await announced_turn(agent, session, 0)
            correction = [{"type": "text", "text": "go on"}]
            params = {"sessionId": session, "expectedTurnId": turn_id, "prompt": correction}
            answers.append(await ext_request(agent, "_muse/steer", params))

        agent.client.on_permission = steer_while_the_approval_waits
        with anyio.fail_after(PROMPT_BOUND):
            response = await agent.prompt(session, "sim:approve ls\nsim:hold\nheld words")
    assert [answer["status"] for answer in answers] == ["accepted"]
    assert response.stop_reason == "end_turn"
    assert agent.client.text(session) == STEERED.format("go on") + "held words"
