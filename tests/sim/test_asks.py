"""Approvals and questions: what the host asks, and how decisions and answers settle them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7
from muse_acp_wire import msp_1_2_1

from .harness import Frame, item_of, labels
from .runs import SimRun, sim_hosted

pytestmark = pytest.mark.anyio

ASKED = [
    "turn/started",
    "item/completed",
    "result",
    "session/tokenUsage",
    "session/contextUsage",
    "item/started",
    "approval/requested",
    "request approval/request",
]
RAN = [
    "item/updated",
    "item/delta",
    "item/completed",
    "session/tokenUsage",
    "session/contextUsage",
    "turn/completed",
]


async def ask_approval(sim: SimRun, session_id: str, directive: str) -> list[Frame]:
    await sim.turn_start(session_id, directive, reasoningEffort="none")
    return await sim.until_method("approval/request")


def decide(session_id: str, approval_id: str, index: int, choice: str) -> dict[str, Any]:
    return {
        "commandId": new_uuid7(),
        "sessionId": session_id,
        "approvalId": approval_id,
        "requirementId": {"approvalId": approval_id, "sourceIndex": index},
        "choiceId": choice,
    }


async def _single_stage(sim: SimRun, session_id: str) -> None:
    asked = await ask_approval(sim, session_id, "sim:approve ls -la")
    await sim.reply(asked[-1])
    requested = asked[-2]["params"]
    approval_id = requested["approvalId"]
    response, before = await sim.request(
        "approval/decide", decide(session_id, approval_id, 0, "allow_once")
    )
    after = await sim.until_method("turn/completed")
    late, _ = await sim.request("approval/decide", decide(session_id, approval_id, 0, "nope"))
    assert labels(asked) == ASKED
    assert asked[-1]["params"] == requested
    msp_1_2_1.ApprovalRequestedParams.model_validate(requested, by_alias=True, by_name=False)
    tool = item_of(asked[5])
    assert tool["approvalId"] == approval_id
    assert requested["itemId"] == tool["itemId"]
    assert requested["toolCallId"] == tool["callId"]
    assert requested["subject"]["kind"] == "shell"
    assert [stage["argv"] for stage in requested["subject"]["stages"]] == [["ls", "-la"]]
    assert [choice["choiceId"] for choice in requested["availableChoices"]] == [
        "allow_once",
        "allow_session",
        "abort",
    ]
    assert before == []
    assert response["result"] == {
        "commandId": response["result"]["commandId"],
        "status": "accepted",
        "approvalId": approval_id,
        "terminal": True,
    }
    assert labels(after) == ["approval/resolved", *RAN]
    resolved = after[0]["params"]
    assert (resolved["decision"], resolved["policyResult"], resolved["resolvedBy"]) == (
        "approved",
        "allow",
        "user",
    )
    assert resolved["decidedByCommandId"] == response["result"]["commandId"]
    running, done = item_of(after[1]), item_of(after[3])
    assert (running["revision"], running["status"]) == (2, "inProgress")
    assert (done["revision"], done["status"]) == (3, "completed")
    assert late["error"]["code"] == -32051
    assert late["error"]["data"]["resolution"] == {
        "decision": "approved",
        "resolvedBy": "user",
        "viewCursor": resolved["viewCursor"],
    }


async def _staged(sim: SimRun, session_id: str) -> None:
    asked = await ask_approval(sim, session_id, "sim:stages 3 echo a && ls; pwd")
    approval_id = asked[-2]["params"]["approvalId"]
    first, _ = await sim.request(
        "approval/decide", decide(session_id, approval_id, 0, "allow_once")
    )
    update = await sim.next()
    stale = await sim.error("approval/decide", decide(session_id, approval_id, 0, "allow_once"))
    invalid = await sim.error("approval/decide", decide(session_id, approval_id, 1, "maybe"))
    second, _ = await sim.request(
        "approval/decide", decide(session_id, approval_id, 1, "allow_once")
    )
    await sim.next()
    third, _ = await sim.request(
        "approval/decide", decide(session_id, approval_id, 2, "allow_once")
    )
    after = await sim.until_method("turn/completed")
    stages = asked[-2]["params"]["subject"]["stages"]
    assert [stage["argv"] for stage in stages] == [["echo", "a"], ["ls"], ["pwd"]]
    assert [stage["totalStages"] for stage in stages] == [3, 3, 3]
    assert [first["result"]["terminal"], second["result"]["terminal"]] == [False, False]
    assert third["result"]["terminal"] is True
    assert update["method"] == "approval/updated"
    params = update["params"]
    assert params["currentRequirementId"] == {"approvalId": approval_id, "sourceIndex": 1}
    assert params["change"] == {
        "kind": "stageResolved",
        "requirementId": {"approvalId": approval_id, "sourceIndex": 0},
        "choiceId": "allow_once",
        "decision": "approved",
    }
    assert [s["resolution"]["kind"] for s in params["subject"]["stages"]] == [
        "allowOnce",
        "unresolved",
        "unresolved",
    ]
    assert stale["code"] == -32053
    assert stale["data"]["currentRequirementId"] == {"approvalId": approval_id, "sourceIndex": 1}
    assert invalid["code"] == -32052
    assert invalid["data"]["choiceId"] == "maybe"
    evidence = after[0]["params"]["stageEvidence"]
    assert [entry["resolution"]["kind"] for entry in evidence] == ["allowOnce"] * 3


async def _abort_and_allow_session(sim: SimRun, session_id: str) -> None:
    asked = await ask_approval(sim, session_id, "sim:approve rm -rf build\nafter")
    approval_id = asked[-2]["params"]["approvalId"]
    aborted, _ = await sim.request("approval/decide", decide(session_id, approval_id, 0, "abort"))
    abort_frames = await sim.until_method("turn/completed")
    asked = await ask_approval(sim, session_id, "sim:stages 2 make && make install")
    approval_id = asked[-2]["params"]["approvalId"]
    session_wide, _ = await sim.request(
        "approval/decide", decide(session_id, approval_id, 0, "allow_session")
    )
    session_frames = await sim.until_method("turn/completed")
    assert aborted["result"]["terminal"] is True
    resolved = abort_frames[0]["params"]
    assert (resolved["decision"], resolved["policyResult"]) == ("abort", "deny")
    tool = item_of(abort_frames[1])
    assert (tool["status"], tool["visibleOutput"]) == ("failed", "tool approval cancelled")
    assert item_of(abort_frames[-4])["text"] == "after"
    assert abort_frames[-1]["params"]["terminal"] == "completed"
    assert session_wide["result"]["terminal"] is True
    resolved = session_frames[0]["params"]
    assert resolved["decision"] == "approvedForSession"
    assert resolved["amendment"]["durability"] == "session"
    assert [e["resolution"]["kind"] for e in resolved["stageEvidence"]] == ["policyAmendment"] * 2


async def _approval_modes(sim: SimRun) -> None:
    denied_session = await sim.start(approvalMode="denyUnmatched")
    await sim.next()  # session/approvalModeChanged follows the start result
    denied = await sim.turn(
        denied_session, "sim:approve curl example.invalid", reasoningEffort="none"
    )
    allowed_session = await sim.start(approvalMode="allowAll")
    await sim.next()
    allowed = await sim.turn(allowed_session, "sim:approve ls", reasoningEffort="none")
    assert labels(denied)[5:9] == [
        "item/started",
        "approval/requested",
        "approval/resolved",
        "item/completed",
    ]
    resolved = denied[7]["params"]
    assert (resolved["decision"], resolved["resolvedBy"]) == ("denied", "policy")
    assert "decidedByCommandId" not in resolved
    assert item_of(denied[8])["status"] == "rejected"
    assert "approval/requested" not in labels(allowed)
    assert item_of(allowed[-4])["status"] == "completed"


async def test_approvals_settle_stage_by_stage_or_all_at_once(tmp_path: Path) -> None:
    """One stage allowed once; three stages one by one (with stale and invalid decisions);
    abort and allow-for-session; and the approval modes that decide without the client."""
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await _single_stage(sim, session_id)
        await _staged(sim, session_id)
        await _abort_and_allow_session(sim, session_id)
        await _approval_modes(sim)


async def test_a_question_is_asked_and_its_answer_reported(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "sim:ask", reasoningEffort="none")
        asked = await sim.until_method("userInput/requested")
        await sim.reply(asked[-2])
        input_id = asked[-1]["params"]["userInputId"]
        answer: dict[str, Any] = {
            "commandId": new_uuid7(),
            "sessionId": session_id,
            "userInputId": input_id,
            "answers": [{"questionId": "choice", "selectedLabel": "gamma"}],
        }
        invalid = await sim.error("userInput/answer", answer)
        unknown = await sim.error("userInput/answer", {**answer, "userInputId": new_uuid7()})
        answer = {
            **answer,
            "commandId": new_uuid7(),
            "answers": [{"questionId": "choice", "selectedLabel": "beta"}],
        }
        accepted, before = await sim.request("userInput/answer", answer)
        after = await sim.until_method("turn/completed")
        late = await sim.error("userInput/answer", {**answer, "commandId": new_uuid7()})
    assert labels(asked) == [
        "turn/started",
        "item/completed",
        "result",
        "session/tokenUsage",
        "session/contextUsage",
        "item/started",
        "request userInput/request",
        "userInput/requested",
    ]
    tool = item_of(asked[5])
    assert tool["tool"] == "request_user_input"
    requested = asked[-1]["params"]
    assert asked[-2]["params"] == requested
    assert (requested["userInputId"], requested["itemId"]) == (tool["itemId"], tool["itemId"])
    assert requested["toolCallId"] == tool["callId"]
    msp_1_2_1.UserInputRequestedParams.model_validate(requested, by_alias=True, by_name=False)
    assert invalid["code"] == -32057
    assert unknown["code"] == -32055
    assert before == []
    assert accepted["result"] == {
        "commandId": answer["commandId"],
        "status": "accepted",
        "userInputId": input_id,
    }
    assert labels(after) == [
        "userInput/settled",
        "item/completed",
        "item/started",
        "item/delta",
        "item/delta",
        "item/delta",
        "item/completed",
        "session/tokenUsage",
        "session/contextUsage",
        "turn/completed",
    ]
    settled = after[0]["params"]
    assert settled["outcome"] == "answered"
    assert settled["answers"] == [{"questionId": "choice", "selectedLabel": "beta"}]
    assert settled["decidedByCommandId"] == answer["commandId"]
    assert item_of(after[1])["visibleOutput"] == (
        '{"status":"answered","answers":[{"id":"choice","selected_label":"beta"}]}'
    )
    assert item_of(after[6])["text"] == "You answered: beta"
    assert late["code"] == -32056


async def test_a_cancelled_question_and_a_client_without_dialogs(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize(userInputDialogs=False)
        session_id = await sim.start()
        await sim.turn_start(session_id, "sim:ask", reasoningEffort="none")
        asked = await sim.until_method("userInput/requested")
        input_id = asked[-1]["params"]["userInputId"]
        await sim.call(
            "userInput/cancel",
            {
                "commandId": new_uuid7(),
                "sessionId": session_id,
                "userInputId": input_id,
                "reason": "client declined",
            },
        )
        after = await sim.until_method("turn/completed")
    assert "request userInput/request" not in labels(asked)
    settled = after[0]["params"]
    assert (settled["outcome"], settled["answers"], settled["reason"]) == (
        "cancelled",
        None,
        "client declined",
    )
    assert item_of(after[1])["status"] == "cancelled"
