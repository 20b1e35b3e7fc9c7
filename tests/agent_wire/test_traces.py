"""Session traces: what ``MUSE_ACP_TRACE`` records, without secrets, and its replay through the
check (``muse_acp.traces``), on every version muse-sim plays. One session is recorded per
version and shared by the tests of this module."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from muse_acp.agent.cards import tool_cards, tool_kinds
from muse_acp.traces.replay import read_trace

from .scenario_traced import Recording, record, replay
from .test_mcp_servers import HTTP_WORKS, VERSIONS

pytestmark = pytest.mark.anyio

_RECORDED: dict[str, Recording] = {}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("recordings")


async def _recording(root: Path, version: str) -> Recording:
    """The session recorded on ``version``, recorded once for the module."""
    if version not in _RECORDED:
        folder = root / version
        folder.mkdir()
        _RECORDED[version] = await record(folder, version, http=HTTP_WORKS[version])
    return _RECORDED[version]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_redacted_trace_has_no_secret_and_replays_with_no_difference(
    recordings: Path, version: str
) -> None:
    recording = await _recording(recordings, version)
    text = recording.trace.read_text(encoding="utf-8")
    assert stat.S_IMODE(recording.trace.stat().st_mode) == 0o600
    assert stat.S_IMODE(recording.trace.parent.stat().st_mode) == 0o700
    for name, canary in recording.canaries.items():
        assert canary not in text, f"the {name} secret is in the trace"
    trace = read_trace(recording.trace)
    methods = {f.get("method") for _, f in trace.acp if isinstance(f, dict)}
    assert {"session/request_permission", "session/cancel", "session/load"} <= methods
    assert trace.hosts, "the hosts' frames are recorded"
    assert trace.decision("backend") is not None
    outcome = await replay(recording)
    assert outcome.first is None, outcome.first.describe()
    assert outcome.host_departures == []
    assert outcome.written == sum(1 for d, _ in trace.acp if d == "out")


async def test_a_card_written_differently_fails_the_check_naming_that_frame(
    recordings: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = await _recording(recordings, "1.4.4")
    outputs = [f for d, f in read_trace(recording.trace).acp if d == "out"]
    first_search = next(
        i
        for i, f in enumerate(outputs, 1)
        if '"sessionUpdate": "tool_call"' in json.dumps(f) and '"kind": "search"' in json.dumps(f)
    )
    original = tool_kinds.kind_for_tool
    monkeypatch.setattr(  # the card's kind as tool_cards reads it; elsewhere as it was
        tool_cards, "kind_for_tool", lambda tool: "read" if tool == "search" else original(tool)
    )
    outcome = await replay(recording)
    assert outcome.first is not None
    said = outcome.first.describe()
    assert said.startswith(f"ACP output frame {first_search} (session/update tool_call)")
    assert "a different kind at .params.update.kind" in said
