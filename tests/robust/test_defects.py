"""Regression tests for the defects an adversarial client found, one or more per defect.

Each drives ``muse-acp serve`` with the raw client (frames exactly as a pipelining or hostile
client writes them) against muse-sim, with short budgets and faults armed per host.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from .faults_harness import MARGIN, Budgets, FaultWorld, fault_world
from .rawagent import EXTENSIONS, RawAgent, id_key

pytestmark = pytest.mark.anyio

BUDGETS: Final = Budgets(startup=8.0, submit=1.5, cancel=1.0, read=5.0, idle=60.0)
FORMS: Final[dict[str, Any]] = {**EXTENSIONS, "elicitation": {"form": {}}}


@pytest.fixture
def faulty(tmp_path: Path) -> FaultWorld:
    return fault_world(tmp_path, BUDGETS)


@asynccontextmanager
async def agent_with_session(
    faulty: FaultWorld, capabilities: dict[str, Any] | None = None, faults: str | None = None
) -> AsyncIterator[tuple[RawAgent, str]]:
    """An initialized agent and a new session; with ``faults``, the host that will serve the
    session's first prompt takes them (a warm-up turn first uses up the executable's probes)."""
    async with faulty.raw_agent(BUDGETS.env()) as agent:
        await agent.result(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": capabilities or EXTENSIONS},
        )
        if faults is not None:
            warm = await agent.new_session()
            assert "result" in await agent.prompt_text(warm, "warm up")
            faulty.arm(faults)
        yield agent, await agent.new_session()


def prompt_frame(request_id: str, session: str, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]},
    }


def cancel_frame(session: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}


async def start_prompt(agent: RawAgent, session: str, text: str) -> str:
    params = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    return await agent.start_request("session/prompt", params)


def frames(*messages: dict[str, Any]) -> bytes:
    """Several frames written with one write, as a pipelining client sends them."""
    return b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in messages)


def chunks_after(agent: RawAgent, key: str, session: str) -> int:
    """Agent message chunks of ``session`` written after the response filed under ``key``."""
    answered = next(
        index
        for index, line in enumerate(agent.lines)
        if line.startswith(b"{")
        and id_key(json.loads(line).get("id")) == key
        and "method" not in json.loads(line)
    )
    late = 0
    for line in agent.lines[answered + 1 :]:
        message = json.loads(line)
        params = message.get("params", {})
        update = params.get("update", {}) if isinstance(params, dict) else {}
        if (
            message.get("method") == "session/update"
            and params.get("sessionId") == session
            and update.get("sessionUpdate") == "agent_message_chunk"
        ):
            late += 1
    return late


# -- 1: a cancel in the same read as its prompt -----------------------------------------------


async def test_a_cancel_written_with_its_prompt_stops_it_before_muse_sees_it(
    faulty: FaultWorld,
) -> None:
    async with agent_with_session(faulty) as (agent, session):
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
        await agent.write(frames(prompt_frame("p1", session, "sim:stream 2000"), cancel))
        response = await agent.response(id_key("p1"))
    assert response.get("result") == {"stopReason": "cancelled"}
    assert faulty.world.host_requests("turn/start") == []


async def test_a_cancel_request_written_with_its_prompt_withdraws_it(faulty: FaultWorld) -> None:
    async with agent_with_session(faulty) as (agent, session):
        withdraw = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "p1"}}
        await agent.write(frames(prompt_frame("p1", session, "sim:stream 2000"), withdraw))
        response = await agent.response(id_key("p1"))
        after = await agent.prompt_text(session, "the next prompt")
    assert response["error"]["code"] == -32800
    assert after.get("result") == {"stopReason": "end_turn"}
    assert len(faulty.world.host_requests("turn/start")) == 1


# -- 2: a new host racing the old one for Muse's session lease --------------------------------


async def test_a_prompt_after_closing_during_a_turn_and_loading_runs_at_once(
    faulty: FaultWorld,
) -> None:
    async with agent_with_session(faulty) as (agent, session):
        for _ in range(3):
            held = await agent.start_request(
                "session/prompt",
                {"sessionId": session, "prompt": [{"type": "text", "text": "sim:hold"}]},
            )
            await faulty_turn_started(faulty, agent)
            assert "result" in await agent.request("session/close", {"sessionId": session})
            assert (await agent.response(held)).get("result") == {"stopReason": "cancelled"}
            cwd = str(faulty.world.workspace)
            await agent.result("session/load", {"sessionId": session, "cwd": cwd, "mcpServers": []})
            answer = await agent.prompt_text(session, "after the load")
            assert answer.get("result") == {"stopReason": "end_turn"}, answer


async def test_a_prompt_after_a_cancel_that_outlived_its_budget_runs_at_once(
    faulty: FaultWorld,
) -> None:
    async with agent_with_session(faulty, faults="hang-ack:turn/cancel") as (agent, session):
        assert faulty.left(), "the warm-up host still runs"
        held = await agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "sim:hold"}]},
        )
        await faulty_turn_started(faulty, agent)
        await agent.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
        )
        assert (await agent.response(held)).get("result") == {"stopReason": "cancelled"}
        answer = await agent.prompt_text(session, "right after")
    assert answer.get("result") == {"stopReason": "end_turn"}, answer


async def faulty_turn_started(faulty: FaultWorld, agent: RawAgent) -> None:
    count = len(faulty.world.host_requests("turn/start"))

    def started() -> bool:
        return any(
            m.get("params", {}).get("update", {}).get("sessionUpdate") == "session_info_update"
            for m in agent.notifications
        ) or len(faulty.world.host_requests("turn/start")) >= max(count, 1)

    await agent.wait_until(started, "the turn to start")


# -- 3: a cancelled turn's late output -------------------------------------------------------


async def test_no_output_of_a_turn_reaches_the_client_after_its_cancelled_answer(
    faulty: FaultWorld,
) -> None:
    async with agent_with_session(faulty, faults="hang-ack:turn/cancel,slow:1") as (
        agent,
        session,
    ):
        key = await agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "sim:stream 3000"}]},
        )
        await agent.wait_until(
            lambda: any(
                m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk"
                for m in agent.notifications
            ),
            "the stream to start",
        )
        await agent.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
        )
        assert (await agent.response(key)).get("result") == {"stopReason": "cancelled"}
        # Give the host time to keep streaming what the client must never see.
        with anyio.move_on_after(1.0):
            await anyio.Event().wait()
        late = chunks_after(agent, key, session)
    assert late == 0


# -- 4: Muse never acknowledging userInput/cancel -----------------------------------------------


async def test_a_question_whose_cancel_muse_never_acknowledges_still_settles(
    faulty: FaultWorld,
) -> None:
    async with agent_with_session(faulty, FORMS, faults="hang-ack:userInput/cancel") as (
        agent,
        session,
    ):
        agent.answers["elicitation/create"] = lambda _: {"result": {"action": "decline"}}
        with anyio.fail_after(BUDGETS.submit + BUDGETS.cancel + MARGIN):
            answer = await agent.prompt_text(session, "sim:ask")
    assert "error" in answer, answer
    failure = answer["error"]["data"]["failure"]
    assert (failure["kind"], failure["phase"]) == ("deadlineExceeded", "answering")


# -- 5: SIGTERM and SIGHUP: see test_lifecycle.py


# -- 6 and 7: preference files that block or cannot be used --------------------------------------


async def test_a_fifo_and_a_corrupt_file_concern_their_own_sessions_only(
    faulty: FaultWorld,
) -> None:
    async with agent_with_session(faulty) as (agent, first):
        assert "result" in await agent.prompt_text(first, "first")
        second = await agent.new_session()
        assert "result" in await agent.prompt_text(second, "second")
        sessions = faulty.world.data_dir / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        (sessions / f"{first}.json").unlink(missing_ok=True)
        os.mkfifo(sessions / f"{first}.json")
        (sessions / f"{second}.json").write_bytes(b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        with anyio.fail_after(10):
            listed = await agent.result("session/list", {"cwd": str(faulty.world.workspace)})
            cwd = str(faulty.world.workspace)
            loaded = await agent.request(
                "session/load", {"sessionId": first, "cwd": cwd, "mcpServers": []}
            )
    entries = {entry["sessionId"]: entry for entry in listed["sessions"]}
    assert set(entries) == {first, second}
    assert "not a regular file" in entries[first]["_meta"]["muse/notice"]
    assert "nests deeper" in entries[second]["_meta"]["muse/notice"]
    assert "result" in loaded


# -- 8: malformed client answers --------------------------------------------------------------

MALFORMED: Final[dict[str, tuple[str, dict[str, Any]]]] = {
    "permission: not an object": ("session/request_permission", {"result": [1]}),
    "permission: unknown outcome": (
        "session/request_permission",
        {"result": {"outcome": {"outcome": "perhaps"}}},
    ),
    "permission: option not offered": (
        "session/request_permission",
        {"result": {"outcome": {"outcome": "selected", "optionId": "x\ny"}}},
    ),
    "permission: an error": (
        "session/request_permission",
        {"error": {"code": -32603, "message": "boom\nsecond line"}},
    ),
    "question: not an object": ("elicitation/create", {"result": "yes"}),
    "question: unknown action": ("elicitation/create", {"result": {"action": "shrug"}}),
    "question: answer not offered": (
        "elicitation/create",
        {"result": {"action": "accept", "content": {"choice": "gamma\n"}}},
    ),
    "question: content of the wrong type": (
        "elicitation/create",
        {"result": {"action": "accept", "content": [1, 2]}},
    ),
    "question: an error": (
        "elicitation/create",
        {"error": {"code": -32603, "message": "form\nbroke"}},
    ),
}
PROMPTS: Final = {
    "session/request_permission": "sim:approve make install",
    "elicitation/create": "sim:ask",
}


@pytest.mark.parametrize(("method", "answer"), MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_client_answer_is_told_in_our_own_words(
    faulty: FaultWorld, method: str, answer: dict[str, Any]
) -> None:
    async with agent_with_session(faulty, FORMS) as (agent, session):
        agent.answers[method] = lambda _: answer
        reply = await agent.prompt_text(session, PROMPTS[method])
    if method == "elicitation/create":
        # The question is withdrawn and Muse goes on; the chat says why, in our words.
        assert reply["result"]["stopReason"] == "end_turn", reply
        told = "".join(
            note["params"]["update"]["content"]["text"]
            for note in agent.notifications
            if note.get("method") == "session/update"
            and note["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        )
        said = next(line for line in told.splitlines() if "withdrawn" in line)
    else:
        error = reply["error"]
        assert error["data"]["failure"]["source"] == "client"
        said = error["message"]
    for leaked in ("input_value", "pydantic", "errors.pydantic.dev", "\n"):
        assert leaked not in said, said


# -- 10: client-supplied values are redacted in errors ------------------------------------------

CANARY: Final = "mk-canary-0123456789"


async def test_client_supplied_values_are_redacted_like_host_text(faulty: FaultWorld) -> None:
    faulty.world.extra_env["META_API_KEY"] = CANARY
    async with agent_with_session(faulty) as (agent, _):
        errors = [
            await agent.request("session/new", {"cwd": f"/no/{CANARY}", "mcpServers": []}),
            await agent.request("session/new", {"cwd": f"relative-{CANARY}", "mcpServers": []}),
            await agent.request("session/prompt", {"sessionId": f"id-{CANARY}", "prompt": []}),
            await agent.request(
                "session/load",
                {"sessionId": f"id-{CANARY}", "cwd": str(faulty.world.workspace), "mcpServers": []},
            ),
            await agent.request("authenticate", {"methodId": CANARY}),
        ]
    for answer in errors:
        assert "error" in answer, answer
        assert CANARY not in json.dumps(answer), answer
    assert CANARY not in faulty.world.stderr_text()


# -- 11: the client going away mid-stream ------------------------------------------------------


async def test_a_client_leaving_mid_stream_costs_one_line_of_log(faulty: FaultWorld) -> None:
    async with agent_with_session(faulty) as (agent, session):
        await agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "sim:stream 20000"}]},
        )
        await agent.wait_until(lambda: len(agent.notifications) > 20, "the stream to start")
        assert agent.process.stdin is not None
        await agent.process.stdin.aclose()  # the client is gone: end of input mid-stream
        with anyio.fail_after(BUDGETS.startup + MARGIN):
            await agent.process.wait()
    log = faulty.world.stderr_text()
    assert log.count("Traceback") == 0, log[-3000:]
    assert log.count("client went away") <= 1
