"""Steering, cancelling, interrupting and queueing turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import agent_texts, item_of, labels
from .runs import SimRun, sim_hosted

pytestmark = pytest.mark.anyio


def steer(session_id: str, turn_id: str, text: str) -> dict[str, Any]:
    return {
        "commandId": new_uuid7(),
        "sessionId": session_id,
        "expectedTurnId": turn_id,
        "input": [{"type": "text", "text": text}],
    }


async def holding(sim: SimRun, session_id: str, text: str = "sim:hold") -> str:
    """Start a turn that holds; returns its id once it has been acknowledged."""
    request_id, turn_id = await sim.turn_start(session_id, text, reasoningEffort="none")
    await sim.until(lambda frame: frame.get("id") == request_id)
    return turn_id


async def test_steering_releases_a_held_turn_unless_it_asks_to_hold(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        turn_id = await holding(sim, session_id, "sim:hold\nbye")
        wrong = await sim.error("turn/steer", steer(session_id, new_uuid7(), "x"))
        first, _ = await sim.request("turn/steer", steer(session_id, turn_id, "again sim:hold"))
        kept = await sim.until(
            lambda frame: (
                frame.get("method") == "item/completed" and item_of(frame)["kind"] == "agentMessage"
            )
        )
        second, _ = await sim.request("turn/steer", steer(session_id, turn_id, "go on"))
        released = await sim.until_method("turn/completed")
        none_running = await sim.error("turn/steer", steer(session_id, turn_id, "late"))
    assert wrong["code"] == -32030
    assert wrong["data"]["kind"] == "commandRejected"
    assert wrong["data"]["reason"] == "invalid_target"
    assert list(wrong["data"]) == ["kind", "retryable", "commandId", "reason"]
    assert first["result"]["turnId"] == second["result"]["turnId"] == turn_id
    assert labels(kept) == ["item/completed", "item/started", *["item/delta"] * 4, "item/completed"]
    user = item_of(kept[0])
    assert (user["kind"], user["text"], user["steered"]) == ("userMessage", "again sim:hold", True)
    assert item_of(kept[-1])["text"] == 'Steering received: "again sim:hold"'
    assert agent_texts(released) == ['Steering received: "go on"', "bye"]
    assert released[-1]["params"]["terminal"] == "completed"
    assert none_running["data"]["reason"] == "missing_run"


async def test_cancel_and_interrupt_end_the_turn_after_their_answer(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        turn_id = await holding(sim, session_id)
        cancel = {"commandId": new_uuid7(), "sessionId": session_id}
        cancelled, before = await sim.request("turn/cancel", cancel)
        cancel_frames = [await sim.next()]
        turn_id_2 = await holding(sim, session_id, "sim:ask")
        await sim.until_method("userInput/requested")
        interrupt = {"commandId": new_uuid7(), "sessionId": session_id, "retract": True}
        interrupted, _ = await sim.request("turn/interrupt", interrupt)
        interrupt_frames = await sim.until(lambda frame: frame.get("method") == "item/updated")
        idle = await sim.error("turn/cancel", {"commandId": new_uuid7(), "sessionId": session_id})
    assert before == []
    assert cancelled["result"] == {
        "commandId": cancel["commandId"],
        "status": "accepted",
        "turnId": turn_id,
    }
    assert labels(cancel_frames) == ["turn/completed"]
    assert cancel_frames[0]["params"]["terminal"] == "cancelled"
    assert cancel_frames[0]["params"]["reason"] == "cancelled while the model was working"
    assert interrupted["result"]["turnId"] == turn_id_2
    assert labels(interrupt_frames) == [
        "userInput/settled",
        "item/completed",
        "turn/completed",
        "turn/retracted",
        "item/updated",
    ]
    assert interrupt_frames[0]["params"]["outcome"] == "interrupted"
    tool = item_of(interrupt_frames[1])
    assert (tool["status"], tool["failureReason"]) == (
        "cancelled",
        "stopped because the turn ended early",
    )
    assert interrupt_frames[2]["params"]["reason"] == "cancelled while waiting for an answer"
    retracted = item_of(interrupt_frames[4])
    assert (retracted["kind"], retracted["revision"], retracted["retracted"]) == (
        "userMessage",
        2,
        True,
    )
    assert idle["data"]["reason"] == "missing_run"


async def test_busy_sessions_queue_steer_or_replace_new_turns(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        turn_id = await holding(sim, session_id)
        queued_id, queued_turn = await sim.turn_start(session_id, "second")
        queued = await sim.until(lambda frame: frame.get("id") == queued_id)
        dropped, before_drop = await sim.request(
            "turn/unqueue",
            {"commandId": new_uuid7(), "sessionId": session_id, "turnId": queued_turn},
        )
        running = await sim.error(
            "turn/unqueue", {"commandId": new_uuid7(), "sessionId": session_id, "turnId": turn_id}
        )
        steer_id, _ = await sim.turn_start(session_id, "steer me", ifBusy="steer")
        steered = await sim.until(lambda frame: frame.get("id") == steer_id)
        completed = await sim.until_method("turn/completed")
        await holding(sim, session_id)
        replace_id, replacement = await sim.turn_start(
            session_id, "instead", ifBusy="replace", reasoningEffort="none"
        )
        replaced = await sim.until(lambda frame: frame.get("id") == replace_id)
        after = await sim.until(
            lambda frame: (
                frame.get("method") == "turn/completed" and frame["params"]["turnId"] == replacement
            )
        )
    assert queued[-1]["result"]["disposition"] == "queued"
    assert queued[-1]["result"]["startedNewTurn"] is False
    assert labels(before_drop) == ["turn/unqueued"]
    assert before_drop[0]["params"]["turnId"] == queued_turn
    assert dropped["result"]["turnId"] == queued_turn
    assert running["data"]["reason"] == "run_active"
    assert steered[-1]["result"]["disposition"] == "steered"
    assert steered[-1]["result"]["turnId"] == turn_id
    assert completed[-1]["params"]["turnId"] == turn_id
    assert replaced[-1]["result"]["disposition"] == "started"
    assert labels(after)[:3] == ["turn/completed", "turn/started", "item/completed"]
    assert after[0]["params"]["terminal"] == "cancelled"
    assert agent_texts(after) == ["instead"]
