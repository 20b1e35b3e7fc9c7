"""Approvals of the newer hosts: protected writes (bare ones too), ``change.reason`` and the
1.4.2 stage race; on other versions the plain behaviour they fall back to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import Frame, SimPeer, item_of, labels, sim_served
from .validation import VERSIONS, bundle

pytestmark = pytest.mark.anyio

PROTECTED = ("1.4.2", "1.4.4", "1.4.13")
"""Versions with protected-write approvals and the stage race (1.4.4 as played on 1.4.2's)."""
"""The version with protected writes and the stage race."""


def decide(session_id: str, approval_id: str, index: int, choice: str) -> dict[str, Any]:
    return {
        "commandId": new_uuid7(),
        "sessionId": session_id,
        "approvalId": approval_id,
        "requirementId": {"approvalId": approval_id, "sourceIndex": index},
        "choiceId": choice,
    }


def has_reasons(version: str) -> bool:
    return "reason" in bundle(version).ApprovalChange.model_fields


async def asked(sim: SimPeer, session_id: str, prompt: str, **extra: Any) -> list[Frame]:
    """Start a turn and read up to the ``approval/request`` server request."""
    await sim.turn_start(session_id, prompt, reasoningEffort="none", **extra)
    return await sim.until_method("approval/request")


def choice_ids(params: dict[str, Any]) -> list[str]:
    return [choice["choiceId"] for choice in params["availableChoices"]]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_protected_write_asks_once_scoped_choices_on_1_4_2(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await asked(sim, session_id, "sim:protected .git/config")
        requested = frames[-2]["params"]
        approval_id = requested["approvalId"]
        session_wide, _ = await sim.request(
            "approval/decide", decide(session_id, approval_id, 0, "allow_session")
        )
        if "error" in session_wide:
            answer = await sim.call(
                "approval/decide", decide(session_id, approval_id, 0, "allow_once")
            )
        else:
            answer = session_wide["result"]
        after = await sim.until_method("turn/completed")
    protected = version in PROTECTED
    assert labels(frames)[-3:] == ["item/started", "approval/requested", "request approval/request"]
    tool = item_of(frames[-3])
    assert (tool["tool"], tool["args"]) == (
        "write_file",
        '{"content":"written by muse-sim\\n","path":".git/config"}',
    )
    assert frames[-1]["params"] == requested
    assert requested["toolName"] == "write_file"
    assert requested["subject"] == {
        "kind": "fileAccess",
        "toolName": "write_file",
        "path": ".git/config",
        "access": "write",
    }
    assert requested["currentRequirementId"] == {"approvalId": approval_id, "sourceIndex": 0}
    assert requested["protectedWrite"] is protected
    if protected:
        assert choice_ids(requested) == ["allow_once", "abort"]
        assert session_wide["error"]["code"] == -32052
        assert session_wide["error"]["data"]["choiceId"] == "allow_session"
    else:
        assert choice_ids(requested) == ["allow_once", "allow_session", "abort"]
    assert answer["terminal"] is True
    assert labels(after)[:3] == ["approval/resolved", "item/updated", "item/completed"]
    resolved = after[0]["params"]
    assert resolved["decision"] == ("approved" if protected else "approvedForSession")
    assert resolved["stageEvidence"] == []
    done = item_of(after[2])
    assert (done["status"], done["visibleOutput"]) == (
        "completed",
        "wrote 20 bytes to .git/config",
    )


@pytest.mark.parametrize("version", VERSIONS)
async def test_allow_all_never_skips_a_protected_write(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start(approvalMode="allowAll")
        if not sim.lists:
            await sim.next()  # session/approvalModeChanged
        await sim.turn_start(session_id, "sim:protected .muse/settings.json")
        frames = await sim.until(
            lambda f: f.get("method") in ("approval/requested", "turn/completed")
        )
        if frames[-1]["method"] == "approval/requested":
            approval_id = frames[-1]["params"]["approvalId"]
            await sim.call("approval/decide", decide(session_id, approval_id, 0, "abort"))
            frames += await sim.until_method("turn/completed")
    asks = [f for f in frames if f.get("method") == "approval/requested"]
    assert len(asks) == (1 if version in PROTECTED else 0)
    tool = [
        item_of(f)
        for f in frames
        if f.get("method") == "item/completed" and item_of(f)["kind"] == "toolCall"
    ]
    expected = ("failed", "tool approval cancelled") if asks else ("completed", None)
    assert (tool[0]["status"], tool[0]["visibleOutput"] if asks else None) == expected


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_bare_protected_write_leaves_out_the_view_cursor_on_1_4_2(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await asked(sim, session_id, "sim:protected-bare .git/hooks/pre-commit")
        bare = list(sim.violations)
        sim.violations.clear()
        pending = await sim.call("approval/listPending", {"sessionId": session_id})
        requested, request = frames[-2]["params"], frames[-1]["params"]
        approval_id = requested["approvalId"]
        await sim.call("approval/decide", decide(session_id, approval_id, 0, "allow_once"))
        await sim.until_method("turn/completed")
    assert request == requested
    assert pending["approvals"][0]["approvalId"] == approval_id
    assert "viewCursor" in pending["approvals"][0]  # the session's log keeps it
    if version not in PROTECTED:
        assert "viewCursor" in requested
        assert requested["protectedWrite"] is False
        assert bare == []
        return
    assert "viewCursor" not in requested
    assert "sourceRange" in requested
    assert requested["protectedWrite"] is True
    # A real 1.4.2 host sent it so, although the bindings require the member.
    assert len(bare) == 2
    assert all("viewCursor" in problem for problem in bare)


@pytest.mark.parametrize("version", VERSIONS)
async def test_updates_carry_a_reason_where_the_bundle_has_one(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await asked(sim, session_id, "sim:stages 2 make && make test")
        approval_id = frames[-2]["params"]["approvalId"]
        await sim.call("approval/decide", decide(session_id, approval_id, 0, "allow_once"))
        update = await sim.next()
        await sim.call("approval/decide", decide(session_id, approval_id, 1, "allow_once"))
        await sim.until_method("turn/completed")
    change = update["params"]["change"]
    assert update["method"] == "approval/updated"
    assert change["kind"] == "stageResolved"
    if has_reasons(version):
        assert change["reason"] == "clientDecision"
    else:
        assert "reason" not in change


async def _race(sim: SimPeer, session_id: str) -> None:
    frames = await asked(sim, session_id, "sim:stagerace echo one && ls .; echo three")
    requested = frames[-2]["params"]
    approval_id = requested["approvalId"]
    first = await sim.call("approval/decide", decide(session_id, approval_id, 0, "allow_once"))
    update = await sim.next()
    stale, before_stale = await sim.request(
        "approval/decide", decide(session_id, approval_id, 1, "allow_once")
    )
    pending, before_pending = await sim.request("approval/listPending", {"sessionId": session_id})
    third = await sim.call("approval/decide", decide(session_id, approval_id, 2, "allow_once"))
    after = await sim.until_method("turn/completed")
    page = await sim.call("view/page", {"sessionId": session_id, "limit": 100})
    assert [stage["argv"] for stage in requested["subject"]["stages"]] == [
        ["echo", "one"],
        ["ls", "."],
        ["echo", "three"],
    ]
    assert first["terminal"] is False
    assert update["method"] == "approval/updated"
    assert update["params"]["currentRequirementId"] == {"approvalId": approval_id, "sourceIndex": 1}
    assert update["params"]["change"]["reason"] == "clientDecision"
    assert stale["error"]["code"] == -32053
    assert stale["error"]["data"] == {
        "kind": "approvalRequirementStale",
        "approvalId": approval_id,
        "currentRequirementId": {"approvalId": approval_id, "sourceIndex": 2},
    }
    assert before_stale == before_pending == []  # nothing but the answers
    (listed,) = pending["result"]["approvals"]
    assert listed["currentRequirementId"] == {"approvalId": approval_id, "sourceIndex": 2}
    kinds = [stage["resolution"]["kind"] for stage in listed["subject"]["stages"]]
    assert kinds == ["allowOnce", "known_safe", "unresolved"]
    assert third["terminal"] is True
    assert labels(after)[0] == "approval/resolved"
    evidence = after[0]["params"]["stageEvidence"]
    assert [entry["resolution"]["kind"] for entry in evidence] == [
        "allowOnce",
        "known_safe",
        "allowOnce",
    ]
    updates = [e["params"] for e in page["events"] if e["method"] == "approval/updated"]
    assert [u["currentRequirementId"]["sourceIndex"] for u in updates] == [1, 2]
    assert updates[1]["change"] == {
        "kind": "stageResolved",
        "requirementId": {"approvalId": approval_id, "sourceIndex": 1},
        "decision": "approved",
        "reason": "policyDecision",
    }


async def _no_race(sim: SimPeer, session_id: str) -> None:
    frames = await asked(sim, session_id, "sim:stagerace echo one && ls .; echo three")
    approval_id = frames[-2]["params"]["approvalId"]
    updates = []
    for index in range(3):
        answer = await sim.call(
            "approval/decide", decide(session_id, approval_id, index, "allow_once")
        )
        assert answer["terminal"] is (index == 2)
        if index < 2:
            updates.append(await sim.next())
    after = await sim.until_method("turn/completed")
    assert [u["params"]["currentRequirementId"]["sourceIndex"] for u in updates] == [1, 2]
    evidence = after[0]["params"]["stageEvidence"]
    assert [entry["resolution"]["kind"] for entry in evidence] == ["allowOnce"] * 3


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_stage_race_of_1_4_2(tmp_path: Path, version: str) -> None:
    """On 1.4.2 the host settles stage 2 itself, unannounced, so a decision for it is stale;
    elsewhere ``sim:stagerace`` is ``sim:stages 3``."""
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await (_race if version in PROTECTED else _no_race)(sim, session_id)
