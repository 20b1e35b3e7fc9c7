"""Durable sessions: a second host reading them, leases, restarts and crash recovery."""

from __future__ import annotations

import base64
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7

from .harness import Frame, SimPeer, item_of, labels, sim_served
from .runs import SimProcess, sim_hosted, sim_process
from .validation import VERSIONS

pytestmark = pytest.mark.anyio


def tool_item(frames: list[Frame]) -> Frame:
    return next(
        item_of(frame)
        for frame in frames
        if frame.get("method") == "item/completed" and item_of(frame)["kind"] == "toolCall"
    )


class StoredAtTurnEnd:
    """The session's stored metadata at the moment each ``turn/completed`` is written."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.seen: list[bytes] = []

    def meta(self, session_id: str) -> bytes:
        return (self.home / "sessions" / session_id / "meta.json").read_bytes()

    def __call__(self, written: bytes) -> None:
        for line in written.splitlines():
            if b'"method":"turn/completed"' in line:
                self.seen.append(self.meta(json.loads(line)["params"]["sessionId"]))


def number(cursor: str) -> int:
    return int(cursor.rsplit(":", 1)[1])


async def read_output(sim: SimPeer, session_id: str, item: Frame, **extra: Any) -> Frame:
    params = {
        "sessionId": session_id,
        "itemId": item["itemId"],
        "outputRef": item["outputRef"]["id"],
        **extra,
    }
    response, _ = await sim.request("item/readOutput", params)
    return response


async def test_a_second_host_reads_what_the_holder_writes(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as holder, sim_hosted(tmp_path) as reader:
        await holder.initialize()
        await reader.initialize()
        session_id = await holder.start(workspace="/projects/one")
        first = await holder.turn(session_id, "hello\nsim:bash 100", reasoningEffort="none")
        request_id, held_turn = await holder.turn_start(
            session_id, "sim:hold", reasoningEffort="none"
        )
        await holder.until(lambda frame: frame.get("id") == request_id)

        read = await reader.call("session/read", {"sessionId": session_id, "excludeItems": False})
        in_use = await reader.error(
            "session/resume", {"commandId": new_uuid7(), "sessionId": session_id}
        )
        not_loaded = await reader.error(
            "turn/start",
            {
                "commandId": new_uuid7(),
                "sessionId": session_id,
                "input": [{"type": "text", "text": "x"}],
            },
        )
        listed = await reader.call("session/list", {"workspaceRoot": "/projects/one"})
        pending = await reader.call("approval/listPending", {"sessionId": session_id})
        tool = tool_item(first)
        output = await read_output(reader, session_id, tool, offsetBytes=14, lengthBytes=20)
        page = await reader.call("view/page", {"sessionId": session_id, "limit": 1000})
    session = read["session"]
    assert (session["status"], session["activeTurnId"]) == ("notLoaded", held_turn)
    assert session["turnCount"] == 1
    assert read["viewCursor"] == page["events"][-1]["params"]["viewCursor"]
    kinds = [item["kind"] for item in read["history"]["items"]]
    assert kinds == ["userMessage", "toolCall", "agentMessage", "userMessage"]
    assert read["pendingRequests"] == []
    assert in_use["code"] == -32021
    assert in_use["data"] == {"kind": "sessionInUse", "retryable": False, "sessionId": session_id}
    assert not_loaded["code"] == -32024
    assert [row["sessionId"] for row in listed["sessions"]] == [session_id]
    assert "approvalMode" not in listed["sessions"][0]
    assert pending == {"approvals": [], "userInputs": []}
    assert output["result"] == {
        "content": ("output-marker\n" * 3)[:20],
        "encoding": "utf8",
        "mediaType": "text/plain; charset=utf-8",
        "offsetBytes": 14,
        "byteLen": 20,
        "eof": False,
    }
    methods = [event["method"] for event in page["events"]]
    assert "item/delta" not in methods
    assert methods[-2:] == ["turn/started", "item/completed"]
    assert [number(e["params"]["viewCursor"]) for e in page["events"]] == list(
        range(1, len(methods) + 1)
    )
    assert page["nextCursor"] is None


async def _paging(sim: SimPeer) -> None:
    session_id = await sim.start()
    await sim.turn(session_id, "a b c")
    await sim.turn(session_id, "d e f")
    everything = await sim.call("view/page", {"sessionId": session_id, "limit": 1000})
    total = len(everything["events"])
    forward: list[Frame] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"sessionId": session_id, "limit": 5}
        if cursor is not None:
            params["cursor"] = cursor
        page = await sim.call("view/page", params)
        forward.extend(page["events"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    backward: list[list[Frame]] = []
    cursor = None
    while True:
        params = {"sessionId": session_id, "limit": 4, "direction": "backward"}
        if cursor is not None:
            params["cursor"] = cursor
        page = await sim.call("view/page", params)
        backward.append(page["events"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    unknown = await sim.error(
        "view/page", {"sessionId": session_id, "limit": 5, "cursor": f"v:{new_uuid7()}:1"}
    )
    anchored = await sim.error(
        "view/page", {"sessionId": session_id, "limit": 5, "anchor": "latestCompaction"}
    )
    zero = await sim.error("view/page", {"sessionId": session_id, "limit": 0})
    assert forward == everything["events"]
    assert [event for page in reversed(backward) for event in page] == everything["events"]
    assert backward[0] == everything["events"][-4:]
    assert all(
        number(a["params"]["viewCursor"]) < number(b["params"]["viewCursor"])
        for page in backward
        for a, b in itertools.pairwise(page)
    )
    assert total == 2 * 8
    assert unknown["code"] == -32011
    assert unknown["data"]["kind"] == "notFound"
    assert unknown["data"]["reason"] == "missingAnchor"
    assert anchored["code"] == -32042
    assert anchored["data"] == {"kind": "noBoundary", "anchor": None, "latestBoundaryCursor": None}
    assert zero["code"] == -32602


async def test_a_restarted_host_resumes_where_the_log_ends(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as first:
        await first.initialize()
        session_id = await first.start()
        before = await first.turn(session_id, "remember this", reasoningEffort="none")
        assert await first.close() == 0
    async with sim_hosted(tmp_path) as second:
        await second.initialize()
        unknown = await second.error(
            "session/resume", {"commandId": new_uuid7(), "sessionId": new_uuid7()}
        )
        resumed = await second.call(
            "session/resume", {"commandId": new_uuid7(), "sessionId": session_id}
        )
        after = await second.turn(session_id, "and this", reasoningEffort="none")
        suffix, replayed = await second.request(
            "session/resume",
            {"commandId": new_uuid7(), "sessionId": session_id, "cursor": resumed["viewCursor"]},
        )
        replayed_events = [await second.next() for _ in range(6)]
    last_before = number(before[-1]["params"]["viewCursor"])
    assert unknown["code"] == -32020
    assert resumed["viewCursor"] == before[-1]["params"]["viewCursor"]
    assert resumed["session"]["status"] == "idle"
    assert resumed["session"]["turnCount"] == 1
    assert [item["text"] for item in resumed["history"]["items"] if "text" in item] == [
        "remember this",
        "remember this",
    ]
    assert number(after[0]["params"]["viewCursor"]) == last_before + 1
    assert replayed == []
    assert suffix["result"]["history"] == {
        "mode": "none",
        "items": None,
        "snapshot": None,
        "noneReason": "cursorSuffix",
    }
    assert labels(replayed_events)[0] == "turn/started"
    assert [frame["params"]["viewCursor"] for frame in replayed_events] == [
        frame["params"]["viewCursor"] for frame in after if "sourceRange" in frame.get("params", {})
    ][:6]


async def test_resuming_after_a_lost_host_closes_a_turn_not_waiting_on_the_user(
    tmp_path: Path,
) -> None:
    """A turn taken up where its host left it only when it waits on the user (see
    ``test_resumed_asks``); one the model was working on is closed as lost. The host that
    crashes is a process: it leaves its files as they are when it dies, nothing cleaned up."""
    async with sim_hosted(tmp_path) as first:
        await first.initialize()
        session_id = await first.start()
        request_id, _ = await first.turn_start(session_id, "sim:hold", reasoningEffort="none")
        await first.until(lambda frame: frame.get("id") == request_id)
    async with sim_process(tmp_path) as crashing:
        await crashing.initialize()
        resume = {"commandId": new_uuid7(), "sessionId": session_id}
        _, closed_hold = await crashing.request("session/resume", resume)
        await crashing.turn_start(session_id, "sim:bash 10\nsim:crash", reasoningEffort="none")
        await crashing.until(
            lambda frame: (
                frame.get("method") == "item/completed" and item_of(frame)["kind"] == "toolCall"
            )
        )
        assert await crashing.exited() != 0
    async with sim_hosted(tmp_path) as last:
        await last.initialize()
        resumed, closed_crash = await last.request(
            "session/resume",
            {"commandId": new_uuid7(), "sessionId": session_id, "excludeItems": True},
        )
    for events in (closed_hold, closed_crash):
        assert labels(events) == ["turn/completed"]
        assert events[0]["params"]["terminal"] == "cancelled"
        assert events[0]["params"]["reason"] == "resume_reconcile:orphaned_by_process_loss"
    assert resumed["result"]["session"]["activeTurnId"] is None
    assert resumed["result"]["pendingRequests"] == []
    assert resumed["result"]["history"]["noneReason"] == "excluded"


async def _stored_output(sim: SimPeer) -> None:
    session_id = await sim.start()
    frames = await sim.turn(
        session_id, "sim:search é\nsim:binary 30\nsim:unavailable 5", reasoningEffort="none"
    )
    tools = [
        item_of(f)
        for f in frames
        if f.get("method") == "item/completed" and item_of(f)["kind"] == "toolCall"
    ]
    search, binary, missing = tools
    whole = await read_output(sim, session_id, search)
    inside = await read_output(sim, session_id, search, offsetBytes=17)
    cut = await read_output(sim, session_id, search, offsetBytes=0, lengthBytes=17)
    raw = await read_output(sim, session_id, binary, offsetBytes=1, lengthBytes=4)
    gone = await read_output(sim, session_id, missing)
    wrong_item = await read_output(sim, session_id, {**search, "itemId": binary["itemId"]})
    text = "README.md\nnotes/é.md\n"
    assert whole["result"]["content"] == text
    assert whole["result"]["eof"] is True
    assert whole["result"]["byteLen"] == len(text.encode())
    assert inside["error"]["code"] == -32602
    assert inside["error"]["data"]["alignedNextOffset"] == 18
    assert cut["result"]["byteLen"] == 16
    assert cut["result"]["content"] == "README.md\nnotes/"
    assert raw["result"]["encoding"] == "base64"
    assert base64.b64decode(raw["result"]["content"]) == b"\x80binary-marker\x00\n"[:4]
    assert raw["result"]["mediaType"] == "application/octet-stream"
    assert gone["error"]["code"] == -32041
    assert gone["error"]["data"]["kind"] == "outputUnavailable"
    assert gone["error"]["data"]["availability"] == "missing"
    assert wrong_item["error"]["code"] == -32041


async def test_history_pages_and_stored_output_ranges(tmp_path: Path) -> None:
    """``view/page`` in both directions with its errors; ``item/readOutput`` ranges that
    respect UTF-8, binary output as base64, and unreadable references."""
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        await _paging(sim)
        await _stored_output(sim)


async def test_a_very_large_output_is_streamed_and_stored_without_being_held(
    tmp_path: Path,
) -> None:
    size = 100 * 1024 * 1024
    streamed = 0
    async with sim_process(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, f"sim:bash {size}", reasoningEffort="none")
        while True:
            line = await sim.line()
            assert isinstance(line, bytes)
            if line.startswith(b'{"jsonrpc":"2.0","method":"item/delta"'):
                delta = json.loads(line)["params"]["delta"]
                assert len(delta) <= 64 * 1024
                streamed += len(delta)
                continue
            frame = json.loads(line)
            if frame.get("method") == "item/completed" and item_of(frame)["kind"] == "toolCall":
                tool = item_of(frame)
            if frame.get("method") == "turn/completed":
                break
        peak = _peak_memory_kib(sim)
        tail = await read_output(sim, session_id, tool, offsetBytes=size - 20)
    assert streamed == size
    assert tool["outputRef"]["byteLen"] == size
    assert tool["truncated"] is True
    start = (size - 20) % len("output-marker\n")
    assert tail["result"]["content"] == ("output-marker\n" * 3)[start : start + 20]
    assert tail["result"]["eof"] is True
    assert tail["result"]["byteLen"] == 20
    if peak is not None:  # Linux only; the simulator alone needs about 40 MiB
        assert peak < 96 * 1024, f"peak resident memory {peak} KiB"


async def _ending(sim: SimPeer, session_id: str, how: str) -> None:
    """End a turn of ``session_id`` ``how``; returns once its last event is read."""
    if how == "completed":
        await sim.turn(session_id, "sim:bash 10")
        return
    request_id, _ = await sim.turn_start(session_id, "sim:hold")
    await sim.until(lambda frame: frame.get("id") == request_id)
    if how == "cancelled":
        await sim.call("turn/cancel", {"commandId": new_uuid7(), "sessionId": session_id})
        await sim.until_method("turn/completed")
    else:
        stop = {"commandId": new_uuid7(), "sessionId": session_id, "retract": True}
        await sim.call("turn/interrupt", stop)
        await sim.until_method("item/updated")


@pytest.mark.parametrize("how", ["completed", "cancelled", "retracted"])
@pytest.mark.parametrize("version", VERSIONS)
async def test_a_turn_is_stored_as_ended_before_its_end_is_announced(
    tmp_path: Path, version: str, how: str
) -> None:
    # A client that sees a turn end (an adapter answering its prompt) may look at the session's
    # files at once; nothing in them may still be changing.
    stored = StoredAtTurnEnd(tmp_path)
    async with sim_served(tmp_path, version, watch=stored) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await _ending(sim, session_id, how)
        await sim.call("session/read", {"sessionId": session_id})  # the host is quiet
        settled = stored.meta(session_id)
    assert stored.seen == [settled]
    assert json.loads(settled)["active_turn_id"] is None


def _peak_memory_kib(sim: SimProcess) -> int | None:
    status = Path(f"/proc/{sim.process.pid}/status")
    if not status.exists():
        return None
    for line in status.read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None
