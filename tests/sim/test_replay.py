"""``muse-sim serve --replay FILE``: recorded conversations played back to a live client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .captures import official_transcripts
from .runs import sim_process

pytestmark = pytest.mark.anyio

OPENING = '{"jsonrpc":"2.0","method":"host/hello","params":{},"emittedAtMs":1}'
RECORDED = [
    ("server", OPENING),
    ("client", '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'),
    (
        "server",
        '{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"muse","version":"9.9.9"}}}',
    ),
    ("client", '{"jsonrpc":"2.0","method":"initialized"}'),
    ("client", '{"jsonrpc":"2.0","id":"a","method":"model/list"}'),
    ("server", '{"jsonrpc":"2.0","method":"note","params":{"n":1},"emittedAtMs":2}'),
    ("server", '{"jsonrpc":"2.0","id":7,"method":"approval/request","params":{"x":1}}'),
    ("server", '{"jsonrpc":"2.0","id":"a","result":{"models":[]}}'),
    ("client", '{"jsonrpc":"2.0","id":7,"result":{}}'),
    ("server", '{"jsonrpc":"2.0","method":"note","params":{"n":2},"emittedAtMs":3}'),
]


def write_transcript(path: Path, entries: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"dir": d, "raw": raw}) + "\n" for d, raw in entries))
    return path


async def test_recorded_answers_follow_the_client_with_its_own_ids(tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.ndjson", RECORDED)
    async with sim_process(tmp_path, "--replay", str(transcript)) as sim:
        opening = await sim.line()
        await sim.send({"jsonrpc": "2.0", "id": 41, "method": "initialize", "params": {}})
        initialized = await sim.next()
        await sim.notify("initialized")
        await sim.send({"jsonrpc": "2.0", "id": 42, "method": "model/list"})
        frames = [await sim.next() for _ in range(3)]
        unknown = await sim.error("session/list")
        await sim.send({"jsonrpc": "2.0", "id": 7, "result": {}})
        last = await sim.line()
    assert opening == OPENING.encode()
    assert initialized == {
        "jsonrpc": "2.0",
        "id": 41,
        "result": {"serverInfo": {"name": "muse", "version": "9.9.9"}},
    }
    assert frames == [
        {"jsonrpc": "2.0", "method": "note", "params": {"n": 1}, "emittedAtMs": 2},
        {"jsonrpc": "2.0", "id": 7, "method": "approval/request", "params": {"x": 1}},
        {"jsonrpc": "2.0", "id": 42, "result": {"models": []}},
    ]
    assert unknown["code"] == -32603
    assert unknown["data"]["kind"] == "internal"
    assert last == b'{"jsonrpc":"2.0","method":"note","params":{"n":2},"emittedAtMs":3}'


async def test_an_unreadable_transcript_is_a_usage_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.ndjson"
    broken.write_text('{"dir": "sideways", "raw": "{}"}\n')
    async with sim_process(tmp_path, "--replay", str(broken)) as sim:
        assert await sim.exited() == 2
    assert "cannot replay" in sim.diagnostics


def _single_turns() -> list[str]:
    """The repository's own single-turn transcript, and the official one when it is at hand."""
    return [
        name for name in ("text-turn", "text-run-single-turn") if name in official_transcripts()
    ]


@pytest.mark.parametrize("scenario", _single_turns())
async def test_a_recorded_transcript_replays_byte_for_byte(tmp_path: Path, scenario: str) -> None:
    path = official_transcripts()[scenario]
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    async with sim_process(tmp_path, "--replay", str(path)) as sim:
        for index, entry in enumerate(entries):
            if entry["dir"] == "client":
                await sim.send_raw(entry["raw"].encode())
                continue
            line = await sim.line()
            assert line == entry["raw"].encode(), f"frame {index} differs"


def test_a_muse_acp_trace_is_replayed_as_its_hosts_frames(tmp_path: Path) -> None:
    from muse_acp.sim.serve.replay import load_transcript

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"serverInfo": {"version": "1.4.4"}}}
    lines = [
        {"trace": 1, "mode": "redacted"},
        {"t": 0.1, "on": "acp", "dir": "in", "frame": {"jsonrpc": "2.0", "method": "x"}},
        {"t": 0.2, "decision": "host", "value": {"on": "msp1"}},
        {"t": 0.3, "on": "msp1", "dir": "out", "frame": initialize},
        {"t": 0.4, "on": "msp2", "dir": "out", "frame": {**initialize, "id": 9}},
        {"t": 0.5, "log": "WARNING muse_acp.agent: something"},
        {"t": 0.6, "on": "msp1", "dir": "in", "frame": answer},
        {"end": True, "entries": 5, "capped": 0, "lost": 0},
    ]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    [first] = load_transcript(trace).turns
    assert (first.kind, first.request_id) == ("initialize", 1)
    assert [json.loads(a) for a in first.answers] == [answer]
    [second] = load_transcript(trace, host="msp2").turns
    assert (second.kind, second.request_id, second.answers) == ("initialize", 9, ())
