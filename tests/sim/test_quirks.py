"""Real-host quirks played on request (``MUSE_SIM_QUIRKS``), on every version."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from muse_acp.sim.options.quirks import NO_QUIRKS, Quirks, QuirkSyntaxError, parse_quirks

from .harness import WAIT, item_of, labels, sim_served
from .runs import sim_env
from .validation import VERSIONS

pytestmark = pytest.mark.anyio

STATUS_VERSIONS = ("1.3.0", "1.4.2", "1.4.4", "1.4.13")
"""The versions whose bundle publishes ``session/statusChanged``."""


def test_quirk_lists_parse_like_fault_lists() -> None:
    assert parse_quirks("") == NO_QUIRKS
    parsed = parse_quirks(" drop-initialized,,no-turn-started ")
    assert parsed == Quirks(frozenset({"drop-initialized", "no-turn-started"}))
    assert (parsed.drop_initialized, parsed.ack_before_started, parsed.no_turn_started) == (
        True,
        False,
        True,
    )
    with pytest.raises(QuirkSyntaxError, match="unknown quirk 'late-ack'"):
        parse_quirks("ack-before-started,late-ack")


def test_an_unknown_quirk_is_a_startup_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "muse_acp.sim", "serve"],
        env=sim_env(tmp_path, "1.3.0", {"MUSE_SIM_QUIRKS": "drop-initialized,bogus"}),
        input="",
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown quirk 'bogus'" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("version", VERSIONS)
async def test_drop_initialized_leaves_every_later_call_not_initialized(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version, quirks=parse_quirks("drop-initialized")) as sim:
        result = await sim.initialize()
        refused = await sim.error("model/list")
        again = await sim.error("session/list", {})
    assert result["serverInfo"]["version"] == version
    for error in (refused, again):
        assert error["code"] == -32600
        assert error["data"] == {"kind": "notInitialized"}


@pytest.mark.parametrize("version", VERSIONS)
async def test_ack_before_started_answers_turn_start_first(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path, version, quirks=parse_quirks("ack-before-started")) as sim:
        await sim.initialize()
        session_id = await sim.start()
        request_id, turn_id = await sim.turn_start(session_id, "hi", reasoningEffort="none")
        frames = await sim.until_method("turn/completed")
    status = ["session/statusChanged"] if version in STATUS_VERSIONS else []
    expected = ["result", "turn/started", *status, "item/completed"]
    assert labels(frames)[: len(expected)] == expected
    assert frames[0]["id"] == request_id
    assert frames[0]["result"]["turnId"] == turn_id
    assert frames[1]["params"]["turnId"] == turn_id
    user = item_of(frames[2 + len(status)])
    assert (user["kind"], user["text"]) == ("userMessage", "hi")
    assert frames[-1]["params"]["terminal"] == "completed"


@pytest.mark.parametrize("version", VERSIONS)
async def test_no_turn_started_lets_turn_completed_follow_the_ack(
    tmp_path: Path, version: str
) -> None:
    async with sim_served(tmp_path, version, quirks=parse_quirks("no-turn-started")) as sim:
        await sim.initialize()
        session_id = await sim.start()
        request_id, turn_id = await sim.turn_start(
            session_id, "sim:fail stepLimit", reasoningEffort="none"
        )
        frames = await sim.until_method("turn/completed")
        page = await sim.call("view/page", {"sessionId": session_id, "limit": 10})
    status = ["session/statusChanged"] if version in STATUS_VERSIONS else []
    assert labels(frames) == [*status, "item/completed", "result", "turn/completed"]
    assert frames[-2]["id"] == request_id
    assert frames[-1]["params"]["turnId"] == turn_id
    # The turn is still in the session's view, so pages and reads know it.
    assert [event["method"] for event in page["events"]][:2] == ["turn/started", "item/completed"]
    if status:
        assert frames[0]["params"]["viewCursor"] == page["events"][0]["params"]["viewCursor"]
