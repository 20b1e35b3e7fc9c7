"""``muse-sim serve --replay FILE``: recorded conversations played back to a live client, at
once or at the recorded pace (``--pace``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from anyio.abc import ByteSendStream

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
    assert (first.at, first.times) == (0.3, (0.6,)), "the times a paced replay waits by"
    assert [json.loads(a) for a in first.answers] == [answer]
    [second] = load_transcript(trace, host="msp2").turns
    assert (second.kind, second.request_id, second.answers) == ("initialize", 9, ())


class _Clock:
    """A replay's clock: each paced wait asked for is kept and moves the time on at once."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


class _Timeline(ByteSendStream):
    """What the player writes, each line with the clock's time when it was written."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock
        self.lines: list[tuple[float, dict[str, object]]] = []
        self._partial = b""

    async def send(self, item: bytes) -> None:
        self._partial += item
        while b"\n" in self._partial:
            line, self._partial = self._partial.split(b"\n", 1)
            self.lines.append((self.clock.now, json.loads(line)))

    async def send_eof(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


TIMED = [  # (ms since the recording began, dir, frame): a host that pauses, once for long
    (0.0, "server", OPENING),
    (10.0, "client", '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'),
    (60.0, "server", '{"jsonrpc":"2.0","id":1,"result":{}}'),
    (70.0, "client", '{"jsonrpc":"2.0","id":"a","method":"model/list"}'),
    (320.0, "server", '{"jsonrpc":"2.0","method":"note","params":{"n":1}}'),
    (2320.0, "server", '{"jsonrpc":"2.0","method":"note","params":{"n":2}}'),
    (62320.0, "server", '{"jsonrpc":"2.0","id":"a","result":{"models":[]}}'),
]


async def _played(pace: float) -> tuple[_Clock, _Timeline]:
    from muse_acp.rpc.memory import memory_stream_pair
    from muse_acp.sim.serve.replay import Player, transcript_of

    transcript = transcript_of(
        [(d, frame.encode()) for _, d, frame in TIMED], [t for t, _, _ in TIMED]
    )
    clock = _Clock()
    timeline = _Timeline(clock)
    (host_in, host_out), (client_in, client_out) = memory_stream_pair()
    for _, direction, frame in TIMED:
        if direction == "client":
            await client_out.send(frame.encode() + b"\n")
    await client_out.aclose()
    try:
        await Player(transcript, pace=pace, sleep=clock.sleep).play(host_in, timeline)
    finally:
        for stream in (host_in, host_out, client_in):
            await stream.aclose()
    return clock, timeline


async def test_a_paced_replay_keeps_the_recorded_order_and_spacing_up_to_the_cap() -> None:
    from muse_acp.sim.serve.replay import MAX_PAUSE

    clock, timeline = await _played(pace=2.0)
    written = [frame for _, frame in timeline.lines]
    recorded = [json.loads(f) for _, d, f in TIMED if d == "server"]
    assert written == recorded
    # Each answer waits twice its recorded interval from the frame before it (the client's
    # request for the first answer), and the minute-long pause is cut to the cap.
    assert clock.waits == pytest.approx([0.1, 0.5, 4.0, MAX_PAUSE])
    times = [at for at, _ in timeline.lines]
    assert times == pytest.approx([0.0, 0.1, 0.6, 4.6, 4.6 + MAX_PAUSE])


async def test_an_unpaced_replay_answers_at_once() -> None:
    clock, timeline = await _played(pace=0.0)
    assert clock.waits == []
    assert len(timeline.lines) == 5


def _request(method: str, frame_id: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": frame_id, "method": method, "params": {}})


def _answer(frame_id: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": frame_id, "result": {}})


async def test_a_host_request_answered_later_than_recorded_is_still_matched() -> None:
    """The client answers the host's approval request after deciding the approval (a slower
    host, or a paced replay, orders the two so): both are matched, nothing departs."""
    from muse_acp.rpc.memory import memory_stream_pair
    from muse_acp.sim.serve.replay import Player, transcript_of

    recorded = [
        ("client", _request("turn/start", 3)),
        ("server", _request("approval/request", 1)),
        ("client", _answer(1)),
        ("client", _request("approval/decide", 5)),
        ("server", _answer(5)),
        ("client", _request("turn/start", 7)),
        ("server", _request("userInput/request", 2)),
        ("client", _answer(2)),
        ("client", _request("turn/start", 9)),
        ("server", _answer(9)),
    ]
    live = [recorded[i][1] for i in (0, 3, 2, 5, 7, 8)]  # the answer to 1 after the decision
    player = Player(transcript_of([(d, f.encode()) for d, f in recorded]))
    (host_in, host_out), (client_in, client_out) = memory_stream_pair()
    for frame in live:
        await client_out.send(frame.encode() + b"\n")
    await client_out.aclose()
    timeline = _Timeline(_Clock())
    try:
        await player.play(host_in, timeline)
    finally:
        for stream in (host_in, host_out, client_in):
            await stream.aclose()
    assert player.departures == []
    assert [f.get("id") for _, f in timeline.lines] == [1, 5, 2, 9]
