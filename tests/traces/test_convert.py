"""Recorded MSP conversations made into traces (``tests.traces.convert``): the client's part is
derived from the recorded requests, the recording is played as muse-acp's session host, and the
trace kept checks with no difference, holds none of the recording's text, and names a request
muse-acp stops sending."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from muse_acp.config import load_config
from muse_acp.sim.in_process import SimLauncher
from muse_acp.traces.check import check_trace
from muse_acp.traces.replay import read_trace
from tests.agent_wire.harness import make_world
from tests.agent_wire.test_mcp_servers import VERSIONS
from tests.sim.captures import FIXTURES
from tests.traces.convert import convert, plan_of, read_recording

pytestmark = pytest.mark.anyio

TEXT_TURN = FIXTURES / "transcripts" / "text-turn"
"""The repository's own recording of a one-turn session (Muse 1.2.1)."""


def _client(method: str, **params: object) -> tuple[str, bytes]:
    return "client", json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    ).encode()


def test_the_client_part_is_derived_from_the_recorded_requests() -> None:
    plan = plan_of(
        [
            _client("initialize"),
            _client("session/start", workspaceRoot="/w"),
            _client("turn/start", input=[{"type": "text", "text": "fix the build"}]),
            _client("approval/decide", choiceId="allow_session"),
            _client("userInput/answer"),
            _client("goal/set", objective="green tests"),
            _client("session/compact"),
            _client("session/list"),
            _client("turn/start", input=[{"type": "text", "text": "never sent"}]),
        ]
    )
    assert plan.refused is None
    assert plan.prompts == [("", "fix the build"), ("/goal set", "green tests"), ("/compact", "")]
    assert plan.choices == ["allow_session"]
    assert plan.rest == "session/list: muse-acp never sends session/list to a session's host"


def test_a_flow_muse_acp_cannot_drive_is_refused_saying_why() -> None:
    resumed = plan_of([_client("initialize"), _client("session/resume", sessionId="s")])
    assert resumed.refused is not None
    assert "session/read" in resumed.refused
    idle = plan_of([_client("initialize"), _client("session/start", workspaceRoot="/w")])
    assert idle.refused == "muse-acp starts a session on Muse only for a prompt; it has none"


async def _check(path: Path, root: Path, version: str) -> tuple[str | None, list[str]]:
    trace = await anyio.to_thread.run_sync(read_trace, path)
    await anyio.Path(root).mkdir()
    world = make_world(root, version=version)
    env = world.env(dict(os.environ))
    outcome = await check_trace(
        trace, load_config(env), env, SimLauncher(), cwd=str(world.workspace)
    )
    return (None if outcome.first is None else outcome.first.describe()), outcome.host_departures


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_recording_becomes_a_trace_that_checks_clean_and_keeps_none_of_its_text(
    tmp_path: Path, version: str
) -> None:
    """On every version muse-sim plays as muse-acp's catalog host and the executable probed."""
    out = tmp_path / "text-turn.jsonl"
    assert await convert(TEXT_TURN, version, out) == "converted"
    kept = out.read_text(encoding="utf-8")
    for _, raw in read_recording(TEXT_TURN):
        for item in json.loads(raw).get("params", {}).get("input", []):
            assert item["text"] not in kept, "the prompt's text is kept redacted only"
    trace = read_trace(out)
    methods = [f.get("method") for d, f in trace.acp if d == "in" and isinstance(f, dict)]
    assert methods == ["initialize", "session/new", "session/prompt"]
    [session_host] = [
        h for h in trace.hosts.values() if any(t.kind == "turn/start" for t in h.turns)
    ]
    assert [t.kind for t in session_host.turns][:4] == [
        "initialize",
        "initialized",
        "session/start",
        "turn/start",
    ]
    assert await _check(out, tmp_path / "clean", version) == (None, [])
    # muse-acp's turn/start no longer in the recording: the check names the request.
    lines = [line for line in kept.splitlines() if '"method": "turn/start"' not in line]
    changed = tmp_path / "changed.jsonl"
    changed.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, departures = await _check(changed, tmp_path / "changed", version)
    assert any("muse-acp sent turn/start, not in the trace" in d for d in departures), departures


async def test_a_request_muse_acp_sends_otherwise_than_recorded_is_named(tmp_path: Path) -> None:
    """The rejected approval of the official transcript, recorded as allowed instead: the
    check names the MSP request whose choice departs from the recording."""
    kept = Path(__file__).parents[1] / "fixtures" / "traces"
    lines = (kept / "official-approval-deny-round-trip.jsonl").read_text().splitlines()
    [decide] = [i for i, line in enumerate(lines) if '"method": "approval/decide"' in line]
    assert '"choiceId": "abort"' in lines[decide]
    lines[decide] = lines[decide].replace('"choiceId": "abort"', '"choiceId": "allow_once"')
    changed = tmp_path / "changed.jsonl"
    changed.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first, departures = await _check(changed, tmp_path / "check", "1.4.4")
    assert first is None, "muse-acp's ACP output is as recorded"
    assert len(departures) == 1
    assert departures[0].startswith("msp2: muse-acp sent approval/decide (recorded client frame")
    assert departures[0].endswith("otherwise: a different choiceId at .params.choiceId")
