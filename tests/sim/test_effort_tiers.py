"""Per-model reasoning-effort tiers: from 1.4.2 each catalog row names its own tiers and default,
a turn that names none runs at its model's default, and a tier the model lacks is refused;
older hosts list no tiers and take every tier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import Frame, SimPeer, item_of, sim_served
from .validation import VERSIONS

pytestmark = pytest.mark.anyio

SPARK = ["minimal", "low", "medium", "high", "xhigh"]
TIERED = ("1.4.2", "1.4.4", "1.4.13")


def _summaries(frames: list[Frame]) -> list[str]:
    return [
        text
        for frame in frames
        if frame.get("method") == "item/completed" and item_of(frame)["kind"] == "reasoning"
        for text in item_of(frame)["summary"]
    ]


async def _set_model(sim: SimPeer, session_id: str, model_id: str) -> None:
    params = {"commandId": new_uuid7(), "sessionId": session_id, "model": {"modelId": model_id}}
    await sim.call("session/setModel", params)


def _tiers(row: dict[str, Any]) -> tuple[Any, ...]:
    described = row.get("reasoningEffortVariants")
    tiers = None if described is None else [entry["tier"] for entry in described]
    return tiers, row.get("variants"), row.get("defaultReasoningEffort")


@pytest.mark.parametrize("version", VERSIONS)
async def test_catalog_rows_name_their_own_tiers_from_1_4_2(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        listed = await sim.call("model/list")
    rows = {row["modelId"]: _tiers(row) for row in listed["models"]}
    if version not in TIERED:
        assert set(rows.values()) == {(None, None, None)}
        return
    assert rows == {
        "muse-spark-1.2": (SPARK, SPARK, "medium"),
        "muse-spark-1.3": ([*SPARK, "max"], [*SPARK, "max"], "high"),
        "muse-spark-1.3-contributor": (["none", *SPARK], ["none", *SPARK], "high"),
    }


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_tier_the_model_lacks_is_refused_from_1_4_2(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        request_id, _ = await sim.turn_start(session_id, "hello", reasoningEffort="ultra")
        frames = await sim.until(lambda f: f.get("id") == request_id)
        if version not in TIERED:
            assert "result" in frames[-1]
            assert _summaries(await sim.until_method("turn/completed")) == [
                "Planning a reply with ultra reasoning effort."
            ]
            return
        error = frames[-1]["error"]
        assert (error["code"], error["data"]["kind"]) == (-32602, "invalidParams")
        assert "'ultra' is not a tier of model muse-spark-1.3-contributor" in error["message"]
        standing = {"commandId": new_uuid7(), "sessionId": session_id, "reasoningEffort": "max"}
        refused = await sim.error("session/setReasoningEffort", standing)
        await _set_model(sim, session_id, "muse-spark-1.3")
        await sim.call("session/setReasoningEffort", {**standing, "commandId": new_uuid7()})
        standing = {**standing, "commandId": new_uuid7(), "reasoningEffort": "none"}
        refused_none = await sim.error("session/setReasoningEffort", standing)
    assert refused["code"] == refused_none["code"] == -32602


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_turn_naming_no_tier_runs_at_its_model_s_default(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        first = _summaries(await sim.turn(session_id, "hello"))
        await _set_model(sim, session_id, "muse-spark-1.2")
        second = _summaries(await sim.turn(session_id, "again"))
    if version not in TIERED:
        assert first == second == ["Planning a reply with default reasoning effort."]
    else:
        assert first == ["Planning a reply with high reasoning effort."]
        assert second == ["Planning a reply with medium reasoning effort."]
