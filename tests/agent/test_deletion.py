"""Muse's native ``session/delete`` as the agent drives it: admission, then the outcome that
``session/deleteCompleted`` reports, each way it can end said in words of the deleting phase."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import pytest
from anyio.abc import TaskGroup

from muse_acp.agent.errors.failures import deadline_exceeded, host_exited, host_rejected
from muse_acp.agent.methods.deletion import delete_natively, outcome_failure
from muse_acp.host.client import EventListener, MspHost
from muse_acp.rpc import RpcError
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

pytestmark = pytest.mark.anyio

SESSION = "0190b5c2-7a1e-7c3d-9f00-123456789abc"
PROMPT_ADVICE = ("prompt", "session/load")


class _Registration:
    def __init__(self, host: FakeHost, session_id: str) -> None:
        self._host, self._session_id = host, session_id

    def close(self) -> None:
        self._host.listeners.pop(self._session_id, None)


class FakeHost:
    """Answers ``session/delete`` as told and then sends the given ``deleteCompleted``s."""

    def __init__(
        self,
        tasks: TaskGroup,
        outcomes: list[dict[str, Any]],
        *,
        error: RpcError | None = None,
        status: str = "accepted",
        dies: bool = False,
    ) -> None:
        self.tasks = tasks
        self.outcomes = outcomes
        self.error = error
        self.status = status
        self.dies = dies
        self.dead = anyio.Event()
        self.listeners: dict[str, EventListener] = {}
        self.sent: list[str] = []

    def listen(self, session_id: str, listener: EventListener) -> _Registration:
        self.listeners[session_id] = listener
        return _Registration(self, session_id)

    async def call(self, method: str, params: WireModel | None, result_type: type[Any]) -> Any:
        self.sent.append(method)
        if self.error is not None:
            raise self.error
        assert isinstance(params, msp.SessionDeleteParams)
        self.tasks.start_soon(self._report, params.command_id)
        return result_type.model_validate({"commandId": params.command_id, "status": self.status})

    async def _report(self, command_id: str) -> None:
        await anyio.sleep(0.01)  # after the acknowledgement, as hosts send it
        for outcome in self.outcomes:
            event = msp.SessionDeleteCompletedParams.model_validate(
                {"sessionId": SESSION, "commandId": command_id, **outcome}
            )
            listener = self.listeners.get(SESSION)
            if listener is not None:
                await listener("session/deleteCompleted", event)
        if self.dies:
            self.dead.set()

    async def ended(self) -> tuple[int | None, str]:
        return 1, "fatal: the store went away\n"


@asynccontextmanager
async def fake_host(outcomes: list[dict[str, Any]], **options: Any) -> AsyncIterator[FakeHost]:
    async with anyio.create_task_group() as tasks:
        yield FakeHost(tasks, outcomes, **options)
        tasks.cancel_scope.cancel()


def _failure(error: RpcError) -> dict[str, Any]:
    data = error.data
    assert isinstance(data, dict)
    failure = data["failure"]
    assert isinstance(failure, dict)
    return failure


async def _delete(host: FakeHost, budget: float = 5.0) -> bool:
    with anyio.fail_after(10):
        return await delete_natively(cast(MspHost, host), SESSION, budget)


async def test_the_outcome_is_waited_for_past_unknown_ones_and_other_commands() -> None:
    outcomes = [
        {"outcome": "completed", "commandId": "0190b5c2-7a1e-7c3d-9f00-000000000001"},
        {"outcome": "stillGoing"},
        {"outcome": "completed"},
    ]
    async with fake_host(outcomes) as host:
        assert await _delete(host) is True
    assert host.sent == ["session/delete"]
    assert host.listeners == {}, "the listener is removed once the outcome is in"


async def test_a_failed_outcome_is_an_error_saying_why_and_that_nothing_was_deleted() -> None:
    failed = {"outcome": "failed", "reason": "writerBusy", "physicalChange": "none"}
    async with fake_host([failed]) as host:
        with pytest.raises(RpcError) as raised:
            await _delete(host)
    error = raised.value
    assert error.data == {
        "failure": {
            "kind": "writerBusy",
            "source": "host",
            "retryable": True,
            "phase": "deleting",
            "execution": "notSubmitted",
        }
    }
    assert "a turn is running or queued on it in Muse" in error.message
    assert "Nothing was deleted." in error.message
    assert "stays listed" in error.message


async def test_an_acknowledged_deletion_that_never_settles_runs_out_of_time() -> None:
    async with fake_host([]) as host:
        with pytest.raises(RpcError) as raised:
            await _delete(host, budget=0.2)
    assert _failure(raised.value)["kind"] == "deadlineExceeded"
    assert "deleting the session in Muse took longer than 0.2 s" in raised.value.message
    assert "List the sessions" in raised.value.message


async def test_a_host_that_dies_before_the_outcome_is_reported_with_its_last_line() -> None:
    async with fake_host([], dies=True) as host:
        with pytest.raises(RpcError) as raised:
            await _delete(host)
    assert _failure(raised.value)["kind"] == "hostExited"
    assert "fatal: the store went away." in raised.value.message
    assert "List the sessions" in raised.value.message


async def test_a_noop_acknowledgement_is_done_at_once() -> None:
    async with fake_host([], status="noop") as host:
        assert await _delete(host, budget=0.2) is True


@pytest.mark.parametrize("kind", ["experimentalRequired", "methodNotFound"])
async def test_a_host_that_does_not_serve_it_is_answered_false(kind: str) -> None:
    refused = RpcError(-32601, "no such method", {"kind": kind})
    async with fake_host([], error=refused) as host:
        assert await _delete(host) is False


async def test_a_session_another_process_holds_is_refused_with_advice() -> None:
    held = RpcError(-32021, "session in use", {"kind": "sessionInUse", "retryable": False})
    async with fake_host([], error=held) as host:
        with pytest.raises(RpcError) as raised:
            await _delete(host)
    assert _failure(raised.value)["kind"] == "sessionInUse"
    assert _failure(raised.value)["retryable"] is True
    assert "another Muse host process holds it" in raised.value.message
    assert "Nothing was deleted" in raised.value.message


@pytest.mark.parametrize(
    ("outcome", "kind", "retryable", "says"),
    [
        (
            {"reason": "sharedSource", "physicalChange": "confirmed"},
            "sharedSource",
            False,
            ("shared with another session", "Part of it was already removed"),
        ),
        (
            {"reason": "brandNewReason", "physicalChange": "brandNewChange"},
            "brandNewReason",
            True,
            ("'brandNewReason'", "Part of it may already have been removed"),
        ),
        ({}, "deleteFailed", True, ("Muse gave no reason", "may already have been removed")),
    ],
)
def test_every_failed_outcome_is_told_in_words(
    outcome: dict[str, Any], kind: str, retryable: bool, says: tuple[str, str]
) -> None:
    done = msp.SessionDeleteCompletedParams.model_validate(
        {"sessionId": SESSION, "commandId": "c", "outcome": "failed", **outcome}
    )
    error = outcome_failure(SESSION, done)
    assert (_failure(error)["kind"], _failure(error)["retryable"]) == (kind, retryable)
    assert all(words in error.message for words in says)


def test_failures_of_the_deleting_phase_give_no_prompt_advice() -> None:
    messages = [
        deadline_exceeded("deleting", 3).message,
        host_exited("deleting", 2, "").message,
        host_rejected("session/delete", RpcError(-32000, "no"), "deleting").message,
    ]
    for message in messages:
        assert "List the sessions to see whether it is still there" in message
        assert not any(advice in message for advice in PROMPT_ADVICE), message
