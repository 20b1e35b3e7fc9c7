"""Every directive, control and read on every simulated version, each frame checked against
that version's own bundle (see ``validation``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import SimPeer, agent_texts, item_of, labels, sim_served
from .validation import VERSIONS

pytestmark = pytest.mark.anyio


def decision(session_id: str, approval_id: str, index: int, choice: str) -> dict[str, Any]:
    return {
        "commandId": new_uuid7(),
        "sessionId": session_id,
        "approvalId": approval_id,
        "requirementId": {"approvalId": approval_id, "sourceIndex": index},
        "choiceId": choice,
    }


async def _tools(sim: SimPeer, session_id: str) -> None:
    prompt = (
        "look\nsim:bash 100\nsim:binary 10\nsim:unavailable 5\nsim:search fo o\n"
        "sim:web cats\nsim:plan\nsim:stream 3"
    )
    frames = await sim.turn(session_id, prompt)
    tools = [
        item_of(f)["tool"]
        for f in frames
        if f.get("method") == "item/completed" and item_of(f)["kind"] == "toolCall"
    ]
    assert tools == ["bash", "bash", "bash", "search", "web_search"]
    assert agent_texts(frames) == ["t0 t1 t2 ", "look"]
    assert frames[-1]["params"]["terminal"] == "completed"


async def _asks(sim: SimPeer, session_id: str) -> None:
    await sim.turn_start(session_id, "sim:approve ls\nsim:stages 2 make && make install")
    for index in (0, 0, 1):
        asked = await sim.until(
            lambda f: f.get("method") in ("approval/requested", "approval/updated")
        )
        approval_id = asked[-1]["params"]["approvalId"]
        await sim.call("approval/decide", decision(session_id, approval_id, index, "allow_once"))
    await sim.until_method("turn/completed")
    await sim.turn_start(session_id, "sim:ask")
    asked = await sim.until_method("userInput/requested")
    await sim.reply(asked[-2])
    answer = {
        "commandId": new_uuid7(),
        "sessionId": session_id,
        "userInputId": asked[-1]["params"]["userInputId"],
        "answers": [{"questionId": "choice", "selectedLabel": "beta"}],
    }
    await sim.call("userInput/answer", answer)
    answered = await sim.until_method("turn/completed")
    assert agent_texts(answered) == ["You answered: beta"]


async def _controls(sim: SimPeer, session_id: str) -> None:
    request_id, turn_id = await sim.turn_start(session_id, "sim:hold\nafter")
    await sim.until(lambda f: f.get("id") == request_id)
    steer = {
        "commandId": new_uuid7(),
        "sessionId": session_id,
        "expectedTurnId": turn_id,
        "input": [{"type": "text", "text": "go"}],
    }
    await sim.call("turn/steer", steer)
    released = await sim.until_method("turn/completed")
    assert agent_texts(released)[-1] == "after"
    request_id, _ = await sim.turn_start(session_id, "sim:hold")
    await sim.until(lambda f: f.get("id") == request_id)
    await sim.call(
        "turn/interrupt", {"commandId": new_uuid7(), "sessionId": session_id, "retract": True}
    )
    stopped = await sim.until_method("item/updated")
    assert "turn/retracted" in labels(stopped)
    failed = await sim.turn(session_id, "sim:fail modelError")
    assert failed[-1]["params"]["terminal"] == "failed"


async def _reads(sim: SimPeer, session_id: str) -> None:
    await sim.call("session/read", {"sessionId": session_id, "excludeItems": False})
    await sim.call("session/list", {})
    page = await sim.call("view/page", {"sessionId": session_id, "limit": 1000})
    assert page["nextCursor"] is None
    await sim.call("approval/listPending", {"sessionId": session_id})
    await sim.call("model/list", {"sessionId": session_id})
    resumed = await sim.call("session/resume", {"commandId": new_uuid7(), "sessionId": session_id})
    assert resumed["session"]["status"] == "idle"
    forked = await sim.call("session/fork", {"commandId": new_uuid7(), "sessionId": session_id})
    assert forked["session"]["forkedFrom"]["sessionId"] == session_id


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_directive_control_and_read_fits_the_version(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start(approvalMode="promptUnmatched")
        await _tools(sim, session_id)
        await _asks(sim, session_id)
        await _controls(sim, session_id)
        await _reads(sim, session_id)
