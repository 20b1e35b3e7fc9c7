"""Steering: admission rules, and the per-session line of corrections against fake turns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.agent.context import AgentContext
from muse_acp.agent.handshake.capabilities import Negotiated
from muse_acp.agent.methods.steering import handle_compatible_steering, handle_muse_steer
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.turns.steering_queue import MAX_WAITING, SteeringQueue, SteerTarget
from muse_acp.config import AdapterConfig
from muse_acp.rpc import RequestContext, RpcError
from muse_acp_wire import acp, msp

from .fakes import add_session

pytestmark = pytest.mark.anyio

WAIT = 5.0
SESSION = "session-1"
PNG = "iVBORw0KGgo="


@dataclass(eq=False)
class FakeTurn:
    """A running turn that records what it was sent; with ``hold`` each send waits for ``gate``."""

    turn_id: str | None = "turn-1"
    steerable: bool = True
    hold: bool = False
    refuse: frozenset[str] = frozenset()
    """Texts Muse refuses."""
    sent: list[str] = field(default_factory=list)
    gate: anyio.Event = field(default_factory=anyio.Event)
    started: anyio.Event = field(default_factory=anyio.Event)
    cancel_requested: bool = False

    def request_cancel(self) -> None:
        self.cancel_requested = True

    async def steer(self, parts: list[msp.TurnInputPart]) -> str:
        text = parts[0].text if isinstance(parts[0], msp.TextTurnInputPart) else "<image>"
        self.started.set()
        if self.hold:
            await self.gate.wait()
        if text in self.refuse:
            raise RpcError(-32600, "Muse did not accept the correction")
        self.sent.append(text)
        assert self.turn_id is not None
        return self.turn_id


def _text(text: str) -> list[msp.TurnInputPart]:
    return [msp.TextTurnInputPart(type="text", text=text)]


class Line:
    """A queue whose running turn the test controls."""

    def __init__(self, turn: FakeTurn, budget: float = WAIT) -> None:
        self.running: SteerTarget | None = turn
        self.queue = SteeringQueue(lambda: self.running, budget)
        self.results: dict[str, str | int] = {}

    async def send(self, turn: FakeTurn, text: str) -> None:
        """Admit and send one correction, recording its turn id or error code."""
        assert turn.turn_id is not None
        ticket = self.queue.admit(turn, turn.turn_id)
        try:
            self.results[text] = await self.queue.send(ticket, _text(text))
        except RpcError as error:
            self.results[text] = error.code


# -- the line --------------------------------------------------------------------------


async def test_corrections_are_sent_in_the_order_they_arrived() -> None:
    turn = FakeTurn(hold=True)
    line = Line(turn)
    tickets = [line.queue.admit(turn, "turn-1") for _ in range(3)]
    results: list[str] = []

    async def send(index: int) -> None:
        results.append(await line.queue.send(tickets[index], _text(f"fix {index}")))

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            for index in (2, 1, 0):
                tasks.start_soon(send, index)
            await turn.started.wait()
            assert line.queue.waiting == 2
            turn.gate.set()
    assert turn.sent == ["fix 0", "fix 1", "fix 2"]
    assert results == ["turn-1"] * 3
    assert line.queue.idle


async def test_at_most_sixteen_corrections_wait_behind_the_one_being_sent() -> None:
    turn = FakeTurn()
    line = Line(turn)
    line.queue.admit(turn, "turn-1")
    for _ in range(MAX_WAITING):
        line.queue.admit(turn, "turn-1")
    with pytest.raises(RpcError) as raised:
        line.queue.admit(turn, "turn-1")
    assert raised.value.code == -32600
    assert line.queue.waiting == MAX_WAITING


async def test_a_correction_queued_behind_a_turn_that_ended_fails_as_stale() -> None:
    turn = FakeTurn(hold=True)
    line = Line(turn)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(line.send, turn, "first")
            await turn.started.wait()
            tasks.start_soon(line.send, turn, "second")
            await anyio.wait_all_tasks_blocked()
            turn.steerable = False
            line.running = None
            turn.gate.set()
    assert line.results == {"first": "turn-1", "second": -32600}
    assert turn.sent == ["first"]


async def test_a_stale_correction_never_reaches_the_successor_turn() -> None:
    ended = FakeTurn(hold=True)
    successor = FakeTurn(turn_id="turn-2")
    line = Line(ended)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(line.send, ended, "first")
            await ended.started.wait()
            tasks.start_soon(line.send, ended, "second")
            await anyio.wait_all_tasks_blocked()
            line.running = successor
            ended.gate.set()
    assert line.results["second"] == -32600
    assert successor.sent == []


async def test_a_turn_whose_id_changed_is_stale() -> None:
    turn = FakeTurn()
    line = Line(turn)
    ticket = line.queue.admit(turn, "turn-1")
    turn.turn_id = "turn-9"
    with anyio.fail_after(WAIT), pytest.raises(RpcError) as raised:
        await line.queue.send(ticket, _text("late"))
    assert raised.value.code == -32600
    assert turn.sent == []


async def test_the_line_moves_on_after_a_refused_correction() -> None:
    turn = FakeTurn(hold=True, refuse=frozenset({"first"}))
    line = Line(turn)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(line.send, turn, "first")
            await turn.started.wait()
            tasks.start_soon(line.send, turn, "second")
            await anyio.wait_all_tasks_blocked()
            turn.gate.set()
    assert line.results == {"first": -32600, "second": "turn-1"}


async def test_closing_the_line_fails_waiting_corrections_at_once() -> None:
    turn = FakeTurn(hold=True)
    line = Line(turn)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(line.send, turn, "first")
            await turn.started.wait()
            tasks.start_soon(line.send, turn, "second")
            await anyio.wait_all_tasks_blocked()
            line.queue.close()
            await anyio.wait_all_tasks_blocked()
            assert line.results == {"second": -32600}, "the waiting one failed before the first"
            turn.gate.set()
    assert line.results["first"] == "turn-1"
    assert turn.sent == ["first"]


async def test_a_withdrawn_correction_leaves_the_line() -> None:
    turn = FakeTurn(hold=True)
    line = Line(turn)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(line.send, turn, "first")
            await turn.started.wait()
            async with anyio.create_task_group() as withdrawn:
                withdrawn.start_soon(line.send, turn, "withdrawn")
                await anyio.wait_all_tasks_blocked()
                assert line.queue.waiting == 1
                withdrawn.cancel_scope.cancel()
            assert line.queue.waiting == 0
            tasks.start_soon(line.send, turn, "third")
            await anyio.wait_all_tasks_blocked()
            turn.gate.set()
    assert turn.sent == ["first", "third"]
    assert "withdrawn" not in line.results


async def test_a_correction_stuck_behind_the_line_gives_up_unsent() -> None:
    turn = FakeTurn(hold=True)
    line = Line(turn, budget=0.05)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(line.send, turn, "first")
            await turn.started.wait()
            await line.send(turn, "second")
            turn.gate.set()
    assert line.results["second"] == -32603
    assert turn.sent == ["first"]


# -- admission ---------------------------------------------------------------------------


def _context(tmp_path: Path, **negotiated: bool) -> AgentContext:
    ctx = AgentContext(AdapterConfig(muse_bin=str(tmp_path / "no-muse"), data_dir=tmp_path))
    ctx.negotiated = Negotiated(**negotiated)
    return ctx


def _session(ctx: AgentContext, turn: FakeTurn | None) -> AcpSession:
    session = add_session(ctx, SESSION)
    if turn is not None:
        session.begin("a prompt")
        session.turn = turn
    return session


def _muse(expected: str = "turn-1", prompt: list[dict[str, Any]] | None = None) -> Any:
    return acp.MuseSteerRequest.model_validate(
        {
            "sessionId": SESSION,
            "expectedTurnId": expected,
            "prompt": prompt or [{"type": "text", "text": "use tabs"}],
        }
    )


def _compatible(expected: str | None = None, idle: str | None = None) -> Any:
    params: dict[str, Any] = {"sessionId": SESSION, "prompt": [{"type": "text", "text": "stop"}]}
    if expected is not None:
        params["expectedTurnId"] = expected
    if idle is not None:
        params["_meta"] = {"steering": {"idleBehavior": idle}}
    return acp.SessionSteeringRequest.model_validate(params)


def _request(method: str) -> RequestContext:
    """A request of ``method`` as its route serves it (steering changes state: it commits)."""
    request = RequestContext(1, method)
    request.declare_changes_state()
    return request


async def _muse_steer(ctx: AgentContext, params: Any) -> acp.MuseSteerResponse:
    with anyio.fail_after(WAIT):
        return await handle_muse_steer(ctx, params, _request("_muse/steer"))


async def _compatible_steer(ctx: AgentContext, params: Any) -> acp.SessionSteeringResponse:
    with anyio.fail_after(WAIT):
        return await handle_compatible_steering(ctx, params, _request("_session/steering"))


async def test_muse_steer_answers_with_the_turn_that_took_the_correction(tmp_path: Path) -> None:
    ctx = _context(tmp_path, steering=True)
    turn = FakeTurn()
    _session(ctx, turn)
    response = await _muse_steer(ctx, _muse())
    assert (response.status, response.turn_id) == ("accepted", "turn-1")
    assert turn.sent == ["use tabs"]


async def test_compatible_steering_targets_the_turn_running_at_arrival(tmp_path: Path) -> None:
    ctx = _context(tmp_path, compatible_steering=True)
    turn = FakeTurn()
    _session(ctx, turn)
    response = await _compatible_steer(ctx, _compatible())
    assert response.model_dump(by_alias=True, exclude_none=True) == {"outcome": "injected"}
    assert turn.sent == ["stop"]


async def test_steering_an_image_sends_it_as_an_image_part(tmp_path: Path) -> None:
    ctx = _context(tmp_path, steering=True)
    turn = FakeTurn()
    _session(ctx, turn)
    image = {"type": "image", "mimeType": "image/png", "data": PNG}
    await _muse_steer(ctx, _muse(prompt=[image]))
    assert turn.sent == ["<image>"]


@pytest.mark.parametrize(
    ("negotiated", "call"),
    [
        ({"compatible_steering": True}, "muse"),
        ({"steering": True}, "compatible"),
        ({}, "muse"),
        ({}, "compatible"),
    ],
)
async def test_steering_that_was_not_negotiated_is_refused(
    tmp_path: Path, negotiated: dict[str, bool], call: str
) -> None:
    ctx = _context(tmp_path, **negotiated)
    turn = FakeTurn()
    _session(ctx, turn)
    steer = _muse_steer(ctx, _muse()) if call == "muse" else _compatible_steer(ctx, _compatible())
    with pytest.raises(RpcError) as raised:
        await steer
    assert raised.value.code == -32600
    assert turn.sent == []


async def test_steering_a_closed_session_is_not_found(tmp_path: Path) -> None:
    ctx = _context(tmp_path, steering=True, compatible_steering=True)
    turn = FakeTurn()
    _session(ctx, turn).closed = True
    for steer in (_muse_steer(ctx, _muse()), _compatible_steer(ctx, _compatible())):
        with pytest.raises(RpcError) as raised:
            await steer
        assert raised.value.code == -32002
    assert turn.sent == []


async def test_unsupported_steering_content_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    ctx = _context(tmp_path, steering=True)
    turn = FakeTurn()
    _session(ctx, turn)
    audio = {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}
    with pytest.raises(RpcError) as raised:
        await _muse_steer(ctx, _muse(prompt=[audio]))
    assert raised.value.code == -32602
    assert turn.sent == []


@pytest.mark.parametrize(
    ("turn_state", "expected"),
    [
        (None, "turn-1"),
        ({"steerable": False}, "turn-1"),
        ({"turn_id": None, "steerable": False}, "turn-1"),
        ({}, "turn-0"),
    ],
    ids=["idle", "cancelled", "not yet acknowledged", "another turn"],
)
async def test_steering_without_a_matching_running_turn_is_refused(
    tmp_path: Path, turn_state: dict[str, Any] | None, expected: str
) -> None:
    ctx = _context(tmp_path, steering=True, compatible_steering=True)
    turn = None if turn_state is None else FakeTurn(**turn_state)
    _session(ctx, turn)
    for steer in (_muse_steer(ctx, _muse(expected)), _compatible_steer(ctx, _compatible(expected))):
        with pytest.raises(RpcError) as raised:
            await steer
        assert raised.value.code == -32600
    assert turn is None or turn.sent == []


async def test_a_wrong_expected_turn_names_the_running_one(tmp_path: Path) -> None:
    ctx = _context(tmp_path, steering=True)
    _session(ctx, FakeTurn())
    with pytest.raises(RpcError) as raised:
        await _muse_steer(ctx, _muse("turn-0"))
    assert raised.value.data == {"activeTurnId": "turn-1"}


async def test_an_idle_session_answers_prompt_required_when_the_client_asked(
    tmp_path: Path,
) -> None:
    ctx = _context(tmp_path, compatible_steering=True)
    _session(ctx, None)
    response = await _compatible_steer(ctx, _compatible(idle="promptRequired"))
    assert response.model_dump(by_alias=True, exclude_none=True) == {
        "outcome": "promptRequired",
        "reason": "noRunningTurn",
    }


@pytest.mark.parametrize("idle", [None, "reject", "startTurn"])
async def test_an_idle_session_refuses_steering_otherwise(tmp_path: Path, idle: str | None) -> None:
    ctx = _context(tmp_path, compatible_steering=True)
    _session(ctx, None)
    with pytest.raises(RpcError) as raised:
        await _compatible_steer(ctx, _compatible(idle=idle))
    assert raised.value.code == -32600


async def test_prompt_required_is_not_the_answer_while_a_cancelled_turn_ends(
    tmp_path: Path,
) -> None:
    ctx = _context(tmp_path, compatible_steering=True)
    _session(ctx, FakeTurn(steerable=False))
    with pytest.raises(RpcError) as raised:
        await _compatible_steer(ctx, _compatible(idle="promptRequired"))
    assert raised.value.code == -32600


async def test_closing_a_session_fails_its_waiting_corrections(tmp_path: Path) -> None:
    ctx = _context(tmp_path, steering=True)
    turn = FakeTurn(hold=True)
    session = _session(ctx, turn)
    codes: list[int | str] = []

    async def steer() -> None:
        try:
            codes.append((await _muse_steer(ctx, _muse())).turn_id)
        except RpcError as error:
            codes.append(error.code)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(steer)
            await turn.started.wait()
            tasks.start_soon(steer)
            await anyio.wait_all_tasks_blocked()
            session.close()
            await anyio.wait_all_tasks_blocked()
            assert codes == [-32600]
            turn.gate.set()
    assert codes == [-32600, "turn-1"]
