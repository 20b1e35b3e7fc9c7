"""``sim:gap``: events the client misses live and pages back; ``sim:spawn``: a real child
process a turn waits for, killed when the turn is stopped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import Frame, agent_texts, item_of, labels, sim_served
from .runs import sim_hosted, sim_process
from .validation import VERSIONS

pytestmark = pytest.mark.anyio


def number(cursor: str) -> int:
    return int(cursor.rsplit(":", 1)[1])


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_gap_is_announced_and_paged_back(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "before\nsim:gap 3\nafter", reasoningEffort="none")
        gap = next(f for f in frames if f.get("method") == "view/gap")["params"]
        missed = await sim.call(
            "view/page", {"sessionId": session_id, "cursor": gap["after"], "limit": 3}
        )
        through = await sim.call(
            "view/page", {"sessionId": session_id, "cursor": gap["after"], "limit": 4}
        )
    at = labels(frames).index("view/gap")
    resumed = frames[at - 1]
    assert list(gap) == ["sessionId", "after", "next"]
    assert gap["sessionId"] == session_id
    assert item_of(resumed)["text"] == "resumed after 3 missed events"
    assert resumed["params"]["viewCursor"] == gap["next"]
    assert number(gap["next"]) == number(gap["after"]) + 4
    # Nothing between after and next was sent live.
    live = {f["params"].get("viewCursor") for f in frames if "params" in f}
    assert all(
        f"v:{session_id}:{n}" not in live
        for n in range(number(gap["after"]) + 1, number(gap["next"]))
    )
    assert [item_of(event)["text"] for event in missed["events"]] == [
        "missed event 1 of 3",
        "missed event 2 of 3",
        "missed event 3 of 3",
    ]
    assert [event["method"] for event in missed["events"]] == ["item/completed"] * 3
    assert through["events"][-1]["params"]["viewCursor"] == gap["next"]
    assert agent_texts(frames) == ["resumed after 3 missed events", "before\nafter"]
    assert frames[-1]["params"]["terminal"] == "completed"


def outputs(frames: list[Frame]) -> list[str]:
    return [f["params"]["delta"] for f in frames if f.get("method") == "item/delta"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_spawned_child_holds_the_turn_until_it_ends(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, version="1.4.2", strict=True) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "sim:spawn 0.2", reasoningEffort="none")
    pid_line, exit_line = outputs(frames)
    assert pid_line == f"pid {int(pid_line.split()[1])}\n"
    assert exit_line == "exit 0\n"
    done = next(
        item_of(f)
        for f in frames
        if f.get("method") == "item/completed" and item_of(f)["kind"] == "toolCall"
    )
    assert (done["tool"], done["status"]) == ("bash", "completed")
    assert done["visibleOutput"] == pid_line + exit_line
    assert not alive(int(pid_line.split()[1]))  # ended and reaped


@pytest.mark.parametrize("stop", ["turn/cancel", "turn/interrupt"])
async def test_stopping_the_turn_kills_the_spawned_child(tmp_path: Path, stop: str) -> None:
    async with sim_process(tmp_path, version="1.3.0", strict=True) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "sim:spawn 60", reasoningEffort="none")
        frames = await sim.until_method("item/delta")
        pid = int(frames[-1]["params"]["delta"].split()[1])
        running = alive(pid)
        same_group = os.getpgid(pid) == os.getpgid(sim.process.pid)
        await sim.call(stop, {"commandId": new_uuid7(), "sessionId": session_id})
        after = await sim.until_method("turn/completed")
        gone = not alive(pid)
    assert (running, same_group, gone) == (True, True, True)
    tool = item_of(after[0])
    assert (tool["status"], tool["visibleOutput"]) == ("cancelled", f"pid {pid}\n")
    assert after[-1]["params"]["terminal"] == "cancelled"


async def test_a_host_that_loses_its_client_kills_its_child(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, version="1.2.1") as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "sim:spawn 60", reasoningEffort="none")
        frames = await sim.until_method("item/delta")
        pid = int(frames[-1]["params"]["delta"].split()[1])
        assert alive(pid)
        assert await sim.close() == 0
    assert not alive(pid)
