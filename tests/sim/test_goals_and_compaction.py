"""``session/compact``, ``sim:autocompact`` and ``goal/*`` as muse-sim serves them, checked
against each version's own bundle (in process, strict)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import SimPeer, agent_texts, item_of, labels, sim_served

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")


def command(session_id: str, **extra: Any) -> dict[str, Any]:
    return {"commandId": new_uuid7(), "sessionId": session_id, **extra}


async def _ready(sim: SimPeer) -> str:
    await sim.initialize()
    return await sim.start()


@pytest.mark.parametrize("version", VERSIONS)
async def test_compact_is_a_noop_without_history_then_records_a_compaction(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version) as sim:
        session_id = await _ready(sim)
        empty = await sim.call("session/compact", command(session_id))
        await sim.turn(session_id, "hello")
        accepted = await sim.call("session/compact", command(session_id))
        frames = await sim.until(
            lambda f: f.get("method") == "item/completed" and item_of(f)["kind"] == "compaction"
        )
        again = await sim.call("session/compact", command(session_id))
    assert empty["status"] == "noop"
    assert empty["reason"] == "no_compactable_history"
    assert accepted["status"] == "accepted"
    assert "reason" not in accepted
    assert labels(frames) == ["item/started", "item/completed"]
    started, completed = item_of(frames[0]), item_of(frames[1])
    assert (started["status"], started["trigger"]) == ("inProgress", "manual")
    assert (completed["status"], completed["outcome"]) == ("completed", "compacted")
    assert completed["tokensAfter"] < completed["tokensBefore"]
    assert completed["itemId"] == started["itemId"]
    assert again["status"] == "noop"


@pytest.mark.parametrize("version", VERSIONS)
async def test_autocompact_is_a_compaction_muse_does_by_itself_in_the_turn(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version) as sim:
        session_id = await _ready(sim)
        frames = await sim.turn(session_id, "sim:autocompact")
    turn_id = next(f["params"]["turnId"] for f in frames if f.get("method") == "turn/started")
    events = [f for f in frames if f.get("method") in ("item/started", "item/completed")]
    items = [item_of(f) for f in events if item_of(f)["kind"] == "compaction"]
    assert [(i["status"], i["trigger"], i["turnId"]) for i in items] == [
        ("inProgress", "auto", turn_id),
        ("completed", "auto", turn_id),
    ]
    assert items[1]["outcome"] == "compacted"
    assert items[1]["tokensAfter"] < items[1]["tokensBefore"]


@pytest.mark.parametrize("version", ["1.3.0", "1.4.2"])
async def test_goal_commands_change_the_goal_and_announce_it(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version) as sim:
        session_id = await _ready(sim)
        missing = await sim.error("goal/pause", command(session_id))
        acks = []
        goals = []
        for method, extra in (
            ("goal/set", {"objective": "Ship it"}),
            ("goal/pause", {}),
            ("goal/resume", {}),
            ("goal/edit", {"objective": "Ship it today"}),
            ("goal/clear", {}),
        ):
            acks.append(await sim.call(method, command(session_id, **extra)))
            changed = await sim.until_method("session/goalChanged")
            goals.append(changed[-1]["params"]["goal"])
        not_paused = await sim.error("goal/resume", command(session_id))
        blank = await sim.error("goal/set", command(session_id, objective="  "))
    assert missing["code"] == -32030
    assert missing["data"]["reason"] == "missing_goal"
    assert [ack["status"] for ack in acks] == ["accepted"] * 5
    assert goals == [
        {"objective": "Ship it", "status": "active", "percentComplete": 0},
        {"objective": "Ship it", "status": "paused", "percentComplete": 0},
        {"objective": "Ship it", "status": "active", "percentComplete": 0},
        {"objective": "Ship it today", "status": "active", "percentComplete": 0},
        None,
    ]
    assert not_paused["data"]["reason"] == "missing_goal"
    assert blank["code"] == -32602


async def test_resuming_an_active_goal_is_refused(tmp_path: Path) -> None:
    async with sim_served(tmp_path, "1.3.0") as sim:
        session_id = await _ready(sim)
        await sim.call("goal/set", command(session_id, objective="Ship it"))
        await sim.until_method("session/goalChanged")
        refused = await sim.error("goal/resume", command(session_id))
    assert refused["data"]["reason"] == "invalid_goal_state"


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1"])
async def test_goal_commands_do_not_exist_before_1_3_0(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version) as sim:
        session_id = await _ready(sim)
        error = await sim.error("goal/set", command(session_id, objective="Ship it"))
    assert error["code"] == -32601


@pytest.mark.parametrize("version", ["1.3.0", "1.4.2"])
async def test_a_goal_wakes_a_turn_that_a_stop_ends_with_the_goal_paused(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version) as sim:
        session_id = await _ready(sim)
        woke = command(session_id, objective="Green the suite")
        ack = await sim.call("goal/set", woke)
        first = await sim.until_method("turn/completed")
        held = await sim.call("goal/edit", command(session_id, objective="sim:hold\nAgain"))
        started = await sim.until_method("turn/started")
        # While a goal turn runs, an edit names that turn and steers it.
        steered = await sim.call("goal/edit", command(session_id, objective="sim:hold\nOnce more"))
        await sim.call("turn/interrupt", command(session_id, turnId=held["turnId"]))
        stopped = await sim.until_method("turn/completed")
        paused = await sim.call("goal/edit", command(session_id, objective="Later"))
        resumed = await sim.call("goal/resume", command(session_id))
        last = await sim.until_method("turn/completed")
    assert sim.violations == []
    assert labels(first)[:2] == ["session/goalChanged", "turn/started"]
    assert first[1]["params"] == {
        **first[1]["params"],
        "turnId": ack["turnId"],
        "commandId": woke["commandId"],
    }
    kinds = [item_of(f)["kind"] for f in first if "item" in f.get("params", {})]
    assert "agentMessage" in kinds
    assert "userMessage" not in kinds
    assert "Green the suite" in agent_texts(first)
    assert started[-1]["params"]["turnId"] == held["turnId"] == steered["turnId"]
    goals = [f["params"]["goal"] for f in stopped if f.get("method") == "session/goalChanged"]
    assert goals[-1] == {
        "objective": "sim:hold\nOnce more",
        "status": "paused",
        "percentComplete": 0,
    }
    assert stopped[-1]["params"]["terminal"] == "cancelled"
    assert "turnId" not in paused  # a paused goal wakes nothing
    assert last[-1]["params"]["turnId"] == resumed["turnId"]
    assert "Later" in agent_texts(last)


@pytest.mark.parametrize("version", ["1.3.0", "1.4.13"])
async def test_sim_goal_again_makes_muse_take_the_next_goal_turn_by_itself(
    tmp_path: Path, version: str
) -> None:
    objective = "Green the suite\nsim:goal-again\nStill greening\nsim:goal-again\nsim:hold\nLast"
    async with sim_served(tmp_path, version) as sim:
        session_id = await _ready(sim)
        woke = command(session_id, objective=objective)
        ack = await sim.call("goal/set", woke)
        first = await sim.until_method("turn/completed")
        second = await sim.until_method("turn/completed")
        third = await sim.until_method("turn/started")
        await sim.call("turn/interrupt", command(session_id, turnId=third[-1]["params"]["turnId"]))
        stopped = await sim.until_method("turn/completed")
        # A stopped goal turn pauses the goal: Muse takes no further turn by itself.
        resumed = await sim.call("goal/resume", command(session_id))
        after = await sim.until_method("turn/completed")
    assert sim.violations == []
    own = [f for f in second if f.get("method") == "turn/started"]
    assert [f["params"]["turnId"] for f in own] != [ack["turnId"]]
    assert own[0]["params"]["commandId"] != woke["commandId"]
    kinds = [item_of(f)["kind"] for f in second if "item" in f.get("params", {})]
    assert "userMessage" not in kinds
    assert "Green the suite" in agent_texts(first)
    assert "Still greening" not in agent_texts(first)
    assert "Still greening" in agent_texts(second)
    assert third[-1]["params"]["commandId"] not in (
        woke["commandId"],
        own[0]["params"]["commandId"],
    )
    assert stopped[-1]["params"]["terminal"] == "cancelled"
    # The resumed goal plays its objective from the start, each part once more.
    assert after[-1]["params"]["turnId"] == resumed["turnId"]
    assert "Green the suite" in agent_texts(after)
