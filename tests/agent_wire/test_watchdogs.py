"""A turn never waits on what cannot come: a host request muse-acp cannot answer."""

from __future__ import annotations

import json
from pathlib import Path

import acp
import anyio
import pytest

from tests.robust.rawagent import RawAgent, id_key, raw_agent

from .harness import WAIT, failure_of, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

STRAY = "tool/requestConsent"
"""A server request method no Muse version publishes and muse-acp does not handle."""


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_host_request_the_adapter_cannot_answer_fails_the_turn_at_once(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    # A silence budget far beyond the wait below: only the unanswerable request can end it.
    world.extra_env.update(MUSE_ACP_SILENCE_TIMEOUT="600", MUSE_SIM_FAULTS=f"stray-request:{STRAY}")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            started = anyio.current_time()
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "please do the work")
            took = anyio.current_time() - started
    assert took < 10, "the turn fails as soon as the request arrives, not after a budget"
    failure = failure_of(raised.value)
    assert (failure["kind"], failure["source"], failure["retryable"], failure["phase"]) == (
        "hostRequestUnanswerable",
        "host",
        True,
        "running",
    )
    message = str(raised.value)
    assert STRAY in message
    assert "Send the prompt again" in message
    assert "Traceback" not in message


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_next_prompt_after_an_unanswerable_request_runs_on_a_new_host(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    world.extra_env.update(MUSE_SIM_FAULTS=f"stray-request:{STRAY}")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            with pytest.raises(acp.RequestError):
                await agent.prompt(session, "first")
            # The fault is in every turn of the simulated host, so this fails again, cleanly.
            with pytest.raises(acp.RequestError) as again:
                await agent.prompt(session, "second")
    assert failure_of(again.value)["kind"] == "hostRequestUnanswerable"


SILENCE = 0.5
"""The silence budget of the stalled-client tests: well under the time the client stalls."""
STALL = 3 * SILENCE
"""How long the client reads nothing: the stimulus itself, three silence budgets."""
CANCEL = "0.5"
"""The cancel budget of the stalled-client tests: it runs out while the client still stalls."""
DELTAS = 8000
LONG_STREAM = f"sim:stream {DELTAS}"
"""About four times what the pipe and the agent's writer hold (``MAX_QUEUED_BYTES``), so the
agent's writes must wait."""


def _chunks(agent: RawAgent, session: str, after: str | None = None) -> list[str]:
    """The text of each agent message chunk of ``session``, in order; with ``after``, only
    those written after the answer filed under that key."""
    messages = [json.loads(line) for line in agent.lines]
    if after is not None:
        answered = next(
            index
            for index, m in enumerate(messages)
            if "method" not in m and id_key(m.get("id")) == after
        )
        messages = messages[answered + 1 :]
    return [
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update"
        and m["params"].get("sessionId") == session
        and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
    ]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_client_that_stops_reading_is_not_muse_going_silent(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with raw_agent(world, {"MUSE_ACP_SILENCE_TIMEOUT": f"{SILENCE:g}"}) as agent:
        await agent.initialize()
        session = await agent.new_session()
        agent.stop_reading()
        key = await agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": LONG_STREAM}]},
        )
        await anyio.sleep(STALL)
        agent.read_again()
        answer = await agent.response(key)
        text = "".join(_chunks(agent, session))
    assert answer.get("result") == {"stopReason": "end_turn"}, answer
    assert text == "".join(f"t{index} " for index in range(DELTAS))
    log = world.stderr_text()
    assert "seems to have stopped reading" in log
    assert "the client reads again" in log
    assert "went silent" not in log


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_cancel_while_the_client_stopped_reading_answers_cancelled(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    budgets = {"MUSE_ACP_SILENCE_TIMEOUT": f"{SILENCE:g}", "MUSE_ACP_CANCEL_TIMEOUT": CANCEL}
    async with raw_agent(world, budgets) as agent:
        await agent.initialize()
        session = await agent.new_session()
        agent.stop_reading()
        key = await agent.start_request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": LONG_STREAM}]},
        )
        await anyio.sleep(STALL)
        await agent.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
        )
        await anyio.sleep(STALL)  # the cancel budget runs out while the client still reads nothing
        agent.read_again()
        answer = await agent.response(key)
        after = await agent.prompt_text(session, "after the stall")
        later = "".join(_chunks(agent, session, after=key))
    assert answer.get("result") == {"stopReason": "cancelled"}, answer
    assert after.get("result") == {"stopReason": "end_turn"}, after
    assert later == "after the stall", "nothing of the cancelled turn follows its answer"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_cancel_while_a_large_edit_waits_on_the_client_answers_cancelled(
    tmp_path: Path, version: str
) -> None:
    # An edit asking permission, its tool call carrying a big diff (more than the pipe and the
    # agent's queue hold), is being written to a client that reads nothing when the turn is
    # cancelled: once the client reads again, every frame arrives whole and the prompt is
    # answered, not lost with a broken stream.
    world = make_world(tmp_path, version=version)
    (world.workspace / "big.txt").write_text("filler line\n" * 30000 + "uniqueword\n")
    budgets = {"MUSE_ACP_SILENCE_TIMEOUT": f"{SILENCE:g}", "MUSE_ACP_CANCEL_TIMEOUT": CANCEL}
    async with raw_agent(world, budgets) as agent:
        await agent.initialize()
        session = await agent.new_session()
        agent.stop_reading()
        key = await agent.start_request(
            "session/prompt",
            {
                "sessionId": session,
                "prompt": [{"type": "text", "text": "sim:edit big.txt uniqueword other"}],
            },
        )
        await anyio.sleep(STALL)
        await agent.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
        )
        await anyio.sleep(STALL)  # the cancel budget runs out while the client still reads nothing
        agent.read_again()
        answer = await agent.response(key)
        after = await agent.prompt_text(session, "after the stall")
    assert answer.get("result") == {"stopReason": "cancelled"}, answer
    assert after.get("result") == {"stopReason": "end_turn"}, after
    assert max(map(len, agent.lines)) > 256 * 1024, "a line larger than the agent's queue"
    assert all(json.loads(line) for line in agent.lines), "every line arrived whole"
