"""Approvals and questions still pending when a session is resumed: sent again right after the
``session/resume`` result, and, when the host that asked is gone, answered to the host that
resumed the session, whose answer lets the turn go on and complete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import Frame, SimPeer, agent_texts, item_of, label
from .runs import sim_hosted
from .test_approval_races import decide
from .validation import VERSIONS

pytestmark = pytest.mark.anyio


async def _left_waiting(home: Path, version: str, text: str, asked: str) -> tuple[str, Frame]:
    """A session whose turn asks the user (``asked`` is the notification), left waiting by a
    host that went away; returns its id and the ask's params."""
    async with sim_hosted(home, version=version, strict=True) as first:
        await first.initialize()
        session_id = await first.start()
        await first.turn_start(session_id, text, reasoningEffort="none")
        frames = await first.until_method(asked)
    params: Frame = frames[-1]["params"]
    return session_id, params


async def _resume(sim: SimPeer, session_id: str) -> tuple[Frame, Frame]:
    """Resume ``session_id``; returns the result and the first host request that follows."""
    await sim.initialize()
    result = await sim.call("session/resume", {"commandId": new_uuid7(), "sessionId": session_id})
    [request] = (await sim.until(lambda frame: "method" in frame and "id" in frame))[-1:]
    return result, request


def _tool_completed(frames: list[Frame]) -> Frame:
    return next(
        item_of(frame)
        for frame in frames
        if frame.get("method") == "item/completed" and item_of(frame)["kind"] == "toolCall"
    )


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_pending_approval_is_sent_again_and_its_answer_completes_the_turn(
    tmp_path: Path, version: str
) -> None:
    session_id, asked = await _left_waiting(
        tmp_path, version, "sim:approve ls -la", "approval/requested"
    )
    async with sim_hosted(tmp_path, version=version, strict=True) as second:
        result, request = await _resume(second, session_id)
        await second.reply(request)
        approval_id = asked["approvalId"]
        await second.call("approval/decide", decide(session_id, approval_id, 0, "allow_once"))
        frames = await second.until_method("turn/completed")
    assert result["session"]["activeTurnId"] == asked["turnId"]
    assert result["pendingRequests"] == [
        {"kind": "approval", "approvalId": approval_id, "viewCursor": asked["viewCursor"]}
    ]
    assert label(request) == "request approval/request"
    assert request["params"]["approvalId"] == approval_id
    assert request["params"]["subject"] == asked["subject"]
    resolved = next(f for f in frames if f.get("method") == "approval/resolved")
    assert resolved["params"]["decision"] == "approved"
    tool = _tool_completed(frames)
    assert (tool["itemId"], tool["status"]) == (asked["itemId"], "completed")
    assert "simulated run of: ls -la" in tool["visibleOutput"]
    assert frames[-1]["params"]["turnId"] == asked["turnId"]
    assert frames[-1]["params"]["terminal"] == "completed"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_pending_question_is_sent_again_and_its_answer_completes_the_turn(
    tmp_path: Path, version: str
) -> None:
    session_id, asked = await _left_waiting(tmp_path, version, "sim:ask", "userInput/requested")
    async with sim_hosted(tmp_path, version=version, strict=True) as second:
        result, request = await _resume(second, session_id)
        await second.reply(request)
        answer = {
            "commandId": new_uuid7(),
            "sessionId": session_id,
            "userInputId": asked["userInputId"],
            "answers": [{"questionId": "choice", "selectedLabel": "beta"}],
        }
        await second.call("userInput/answer", answer)
        frames = await second.until_method("turn/completed")
    assert result["pendingRequests"][0]["userInputId"] == asked["userInputId"]
    assert label(request) == "request userInput/request"
    assert request["params"]["questions"] == asked["questions"]
    settled = next(f for f in frames if f.get("method") == "userInput/settled")
    assert settled["params"]["outcome"] == "answered"
    assert _tool_completed(frames)["status"] == "completed"
    assert "You answered: beta" in agent_texts(frames)
    assert frames[-1]["params"]["terminal"] == "completed"


@pytest.mark.parametrize("version", ["1.1.1", "1.4.2"])
async def test_a_taken_up_turn_is_cancelled_like_any_other(tmp_path: Path, version: str) -> None:
    session_id, asked = await _left_waiting(
        tmp_path, version, "sim:approve ls", "approval/requested"
    )
    async with sim_hosted(tmp_path, version=version, strict=True) as second:
        _, request = await _resume(second, session_id)
        await second.reply(request)
        cancel: dict[str, Any] = {
            "commandId": new_uuid7(),
            "sessionId": session_id,
            "turnId": asked["turnId"],
        }
        await second.call("turn/cancel", cancel)
        frames = await second.until_method("turn/completed")
        after = await second.turn(session_id, "next", reasoningEffort="none")
    resolved = next(f for f in frames if f.get("method") == "approval/resolved")
    assert resolved["params"]["decision"] == "abort"
    assert _tool_completed(frames)["status"] == "cancelled"
    assert frames[-1]["params"]["terminal"] == "cancelled"
    assert after[-1]["params"]["terminal"] == "completed"


async def test_a_second_resume_by_the_same_host_sends_the_request_again(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, strict=True) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "sim:ask", reasoningEffort="none")
        first = await sim.until(lambda frame: frame.get("method") == "userInput/request")
        await sim.reply(first[-1])
        response, _ = await sim.request(
            "session/resume", {"commandId": new_uuid7(), "sessionId": session_id}
        )
        [again] = (await sim.until(lambda frame: frame.get("method") == "userInput/request"))[-1:]
        await sim.reply(again)
    assert response["result"]["session"]["status"] == "running"
    assert again["params"]["userInputId"] == first[-1]["params"]["userInputId"]
