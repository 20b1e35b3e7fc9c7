"""Turns of the fake model: the echo, each tool directive, failures and crashes."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from muse_acp.sim.state.ids import new_uuid7
from muse_acp_wire import msp_1_1_1, msp_1_2_1

from .harness import Frame, agent_texts, item_of, labels
from .runs import sim_hosted

pytestmark = pytest.mark.anyio

ECHO_FRAMES = [
    "turn/started",
    "item/completed",
    "result",
    "item/started",
    "item/delta",
    "item/completed",
    "item/started",
    "item/delta",
    "item/delta",
    "item/delta",
    "item/delta",
    "item/completed",
    "session/tokenUsage",
    "session/contextUsage",
    "turn/completed",
]
TOOL_FRAMES = ["session/tokenUsage", "session/contextUsage", "item/started"]


def validate(frames: list[Frame], wire: Any) -> None:
    """Every notification parses with the version's bindings, and the cursors advance."""
    for frame in frames:
        spec = wire.CLIENT_NOTIFICATIONS.get(frame.get("method")) if "id" not in frame else None
        if spec is not None:
            spec.params.model_validate(frame["params"], by_alias=True, by_name=False)
            assert list(frame)[-1] == "emittedAtMs"


def durable_numbers(frames: list[Frame]) -> list[int]:
    return [
        int(frame["params"]["viewCursor"].rsplit(":", 1)[1])
        for frame in frames
        if "sourceRange" in frame.get("params", {})
    ]


async def test_a_plain_prompt_is_echoed_after_a_reasoning_summary(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "one two three four five six seven")
        effortful = await sim.turn(session_id, "again", reasoningEffort="high")
    assert labels(frames) == ECHO_FRAMES
    validate(frames, msp_1_2_1)
    started, message, ack = frames[0], item_of(frames[1]), frames[2]["result"]
    turn_id = started["params"]["turnId"]
    assert ack == {
        "commandId": turn_id,
        "status": "accepted",
        "turnId": turn_id,
        "startedNewTurn": True,
        "disposition": "started",
    }
    assert started["params"]["commandId"] == turn_id
    assert message["kind"] == "userMessage"
    assert message["text"] == "one two three four five six seven"
    reasoning = [item_of(frames[3]), item_of(frames[5])]
    assert [(r["kind"], r["revision"], r["status"]) for r in reasoning] == [
        ("reasoning", 1, "inProgress"),
        ("reasoning", 2, "completed"),
    ]
    assert frames[4]["params"]["field"] == "summary.0"
    agent_start, agent_done = item_of(frames[6]), item_of(frames[11])
    assert agent_start == {
        "itemId": agent_start["itemId"],
        "kind": "agentMessage",
        "turnId": turn_id,
        "revision": 1,
        "status": "inProgress",
        "text": "",
    }
    deltas = [frame["params"]["delta"] for frame in frames[7:11]]
    assert "".join(deltas) == agent_done["text"] == "one two three four five six seven"
    assert (agent_done["revision"], agent_done["status"]) == (2, "completed")
    assert "sourceRange" not in frames[6]["params"]
    assert frames[7]["params"]["viewCursor"].endswith(".2")
    assert durable_numbers(frames) == list(range(1, 9))
    completed = frames[-1]["params"]
    assert (completed["turnId"], completed["terminal"]) == (turn_id, "completed")
    summary = item_of(effortful[5])["summary"]
    assert summary == ["Planning a reply with high reasoning effort."]
    usage = next(f["params"] for f in effortful if f.get("method") == "session/tokenUsage")
    assert usage["usage"]["reasoningTokens"] == 64
    before = frames[-3]["params"]["cumulative"]["totalTokens"]
    assert usage["cumulative"]["totalTokens"] == before + usage["totalTokens"]


async def test_tool_directives_run_in_order_and_images_are_echoed(tmp_path: Path) -> None:
    """Search, web search and plan steps, an image echo, and stored output references."""
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        request_id, _ = await sim.turn_start(
            session_id,
            "look\nsim:search fo o\nsim:web cats and dogs\nsim:plan",
            reasoningEffort="none",
        )
        del request_id
        frames = await sim.until_method("turn/completed")
        image = {
            "type": "image",
            "base64Data": base64.b64encode(b"\x89PNG").decode(),
            "mediaType": "image/png",
        }
        await sim.send(
            {
                "jsonrpc": "2.0",
                "id": sim.new_id(),
                "method": "turn/start",
                "params": {
                    "commandId": new_uuid7(),
                    "sessionId": session_id,
                    "input": [{"type": "text", "text": "see"}, image],
                    "reasoningEffort": "none",
                },
            }
        )
        image_frames = await sim.until_method("turn/completed")
        stored = await sim.turn(
            session_id, "sim:unavailable 10\nsim:binary 40", reasoningEffort="none"
        )
    validate(frames, msp_1_2_1)
    assert labels(frames) == [
        "turn/started",
        "item/completed",
        "result",
        *TOOL_FRAMES,
        "item/delta",
        "item/completed",
        *TOOL_FRAMES,
        "item/delta",
        "item/completed",
        "session/todoListChanged",
        "item/started",
        "item/delta",
        "item/completed",
        "session/tokenUsage",
        "session/contextUsage",
        "turn/completed",
    ]
    search, web = item_of(frames[7]), item_of(frames[12])
    assert search["tool"] == "search"
    assert search["args"] == (
        '{"glob":["**/*"],"output_mode":"files_with_matches","paths":[],"pattern":"fo o"}'
    )
    assert search["visibleOutput"] == "README.md\nnotes/fo o.md\n"
    assert search["outputRef"]["availability"] == "available"
    assert web["tool"] == "web_search"
    assert json.loads(web["args"]) == {"query": "cats and dogs"}
    assert [entry["status"] for entry in frames[13]["params"]["items"]] == [
        "completed",
        "inProgress",
        "pending",
    ]
    assert frames[3]["params"]["finishReason"] == "tool_calls"
    assert "finishReason" not in frames[-3]["params"]
    echo = item_of(image_frames[-4])
    assert echo["text"] == "see\n[image image/png, 4 bytes]"
    user = item_of(image_frames[1])
    assert user["attachments"] == [{"mediaType": "image/png", "byteLen": 4}]
    missing, binary = [
        item_of(f)
        for f in stored
        if f.get("method") == "item/completed" and item_of(f)["kind"] == "toolCall"
    ]
    assert missing["outputRef"]["availability"] == "missing"
    assert missing["visibleOutput"] == "output-marker\n"[:10]
    assert "truncated" not in missing
    assert binary["outputRef"]["mediaType"] == "application/octet-stream"
    assert binary["outputRef"]["byteLen"] == 40


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1"])
async def test_bash_output_streams_exactly_n_bytes_with_a_bounded_visible_head(
    tmp_path: Path, version: str
) -> None:
    size = 20_000
    async with sim_hosted(tmp_path, version=version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, f"sim:bash {size}", reasoningEffort="none")
    validate(frames, msp_1_2_1 if version == "1.2.1" else msp_1_1_1)
    deltas = [f["params"]["delta"] for f in frames if f.get("method") == "item/delta"]
    output = "".join(deltas)
    assert len(output) == size
    assert output == ("output-marker\n" * (size // 14 + 1))[:size]
    started = next(item_of(f) for f in frames if f.get("method") == "item/started")
    done = next(
        item_of(f)
        for f in frames
        if f.get("method") == "item/completed" and item_of(f)["kind"] == "toolCall"
    )
    assert started["tool"] == "bash"
    assert json.loads(started["args"]) == {
        "command": f"yes output-marker | head -c {size}",
        "description": f"Print {size} bytes of output",
    }
    assert (done["revision"], done["status"], done["truncated"]) == (2, "completed", True)
    assert done["visibleOutput"] == output[: 16 * 1024]
    if version == "1.2.1":
        ref = done["outputRef"]
        assert list(ref) == ["id", "uri", "kind", "byteLen", "availability", "mediaType"]
        assert (ref["kind"], ref["byteLen"], ref["availability"]) == (
            "tool_output",
            size,
            "available",
        )
    else:
        assert "outputRef" not in done


async def test_failure_directives_end_the_turn_and_unknown_ones_are_text(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "sim:fail modelError\nnever echoed")
        later = await sim.turn(session_id, "sim:fail stepLimit", reasoningEffort="none")
        unknown = await sim.turn(session_id, "sim:bash lots\nsim:teleport", reasoningEffort="none")
    completed = frames[-1]["params"]
    assert completed["terminal"] == "failed"
    assert completed["error"] == {
        "kind": "modelError",
        "message": "simulated modelError failure",
        "retryable": True,
    }
    assert completed["reason"] == "simulated modelError failure"
    assert not any(
        item_of(f)["kind"] == "agentMessage" for f in frames if f.get("method") == "item/completed"
    )
    assert labels(later) == ["turn/started", "item/completed", "result", "turn/completed"]
    assert later[-1]["params"]["error"]["retryable"] is False
    assert agent_texts(unknown) == ["sim:bash lots\nsim:teleport"]


async def test_a_crash_directive_ends_the_host_mid_turn(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "sim:plan\nsim:crash\nsim:bash 5")
        frames = await sim.until_method("session/todoListChanged")
        status = await sim.exited()
    assert labels(frames)[:3] == ["turn/started", "item/completed", "result"]
    assert status != 0
    assert "sim:crash" in sim.diagnostics


async def test_a_stream_directive_sends_one_agent_message_as_exactly_n_deltas(
    tmp_path: Path,
) -> None:
    async with sim_hosted(tmp_path) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "sim:stream 5", reasoningEffort="none")
    validate(frames, msp_1_2_1)
    deltas = [f["params"] for f in frames if f.get("method") == "item/delta"]
    assert [(d["field"], d["delta"]) for d in deltas] == [
        ("text", "t0 "),
        ("text", "t1 "),
        ("text", "t2 "),
        ("text", "t3 "),
        ("text", "t4 "),
    ]
    assert {d["itemId"] for d in deltas} == {
        item_of(f)["itemId"] for f in frames if f.get("method") == "item/started"
    }
    assert agent_texts(frames) == ["t0 t1 t2 t3 t4 "]
    assert frames[-1]["params"]["terminal"] == "completed"


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1", "1.3.0", "1.4.2"])
async def test_the_flags_directive_reports_the_serve_flags_and_they_are_honoured(
    tmp_path: Path, version: str
) -> None:
    flags = ("--disable-write", "--disable-shell", "--disable-sandbox", "--sandbox-network=enabled")
    async with sim_hosted(tmp_path, *flags, version=version) as sim:
        await sim.initialize()
        session_id = await sim.start()
        frames = await sim.turn(session_id, "sim:flags\nsim:bash 5\nsim:edit a.py x y")
    assert any(
        "[host flags: --disable-write --disable-shell --disable-sandbox "
        "--sandbox-network=enabled; approval mode: promptUnmatched]" in text
        for text in agent_texts(frames)
    )
    tools = [item_of(f) for f in frames if f.get("method") == "item/completed"]
    refused = [t for t in tools if t["kind"] == "toolCall"]
    assert [t["status"] for t in refused] == ["rejected", "rejected"]
    assert "--disable-shell" in json.dumps(refused[0])
    assert "--disable-write" in json.dumps(refused[1])
