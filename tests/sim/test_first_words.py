"""``MUSE_SIM_TIMINGS``: a host notes when it read each ``turn/start`` and wrote that turn's
first words, on the clock the bench reads, on every simulated version; unasked, it notes nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.first_words import TIMINGS_ENV

from .runs import sim_hosted
from .validation import VERSIONS

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_host_notes_each_turns_start_and_first_words_once(
    tmp_path: Path, version: str
) -> None:
    marks = tmp_path / "marks"
    before = time.perf_counter()
    async with sim_hosted(tmp_path / "home", version=version, env={TIMINGS_ENV: str(marks)}) as sim:
        await sim.initialize()
        session_id = await sim.start()
        first = await sim.turn(session_id, "sim:stream 5")
        second = await sim.turn(session_id, "one two three")
        await sim.close()
    after = time.perf_counter()
    noted = _noted(marks)
    assert [mark["mark"] for mark in noted] == ["turn/start", "text", "turn/start", "text"]
    times = [mark["at"] for mark in noted]
    assert before < times[0] <= times[1] <= times[2] <= times[3] < after
    for frames in (first, second):
        texts = [
            f for f in frames if f.get("method") == "item/delta" and f["params"]["field"] == "text"
        ]
        assert len(texts) > 1, "one mark for a turn's first words, however many deltas follow"


async def test_a_host_notes_nothing_unless_asked(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path / "home") as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn(session_id, "hello")
        await sim.close()
    assert _left(tmp_path) == []


def _noted(directory: Path) -> list[dict[str, Any]]:
    [path] = directory.glob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def _left(directory: Path) -> list[Path]:
    return list(directory.rglob("muse-sim-*.jsonl"))
