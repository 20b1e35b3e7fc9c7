"""Injected host faults (``MUSE_SIM_FAULTS``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import pytest

from muse_acp.sim.options.faults import Faults, FaultSyntaxError, parse_faults
from muse_acp.sim.state.ids import new_uuid7

from .harness import labels
from .runs import SimRun, sim_hosted, sim_process

pytestmark = pytest.mark.anyio


Runner = Callable[..., AbstractAsyncContextManager[SimRun]]
"""``sim_hosted`` or ``sim_process``."""


def faults(text: str) -> dict[str, str]:
    return {"MUSE_SIM_FAULTS": text}


def test_fault_lists_parse_into_frozen_settings() -> None:
    parsed = parse_faults("exit:approval, hang-ack:turn/start,slow:25,stderr-flood:10")
    assert parsed == Faults(
        exits=frozenset({"approval"}),
        hang_ack=frozenset({"turn/start"}),
        slow_ms=25,
        stderr_flood=10,
        names=("exit:approval", "hang-ack:turn/start", "slow:25", "stderr-flood:10"),
    )
    assert parse_faults("") == Faults()


@pytest.mark.parametrize("text", ["explode:now", "exit:lunch", "slow:fast", "hang-ack:", "exit"])
def test_malformed_fault_lists_are_refused(text: str) -> None:
    with pytest.raises(FaultSyntaxError):
        parse_faults(text)


async def _exits_at_startup(home: Path) -> None:
    async with sim_hosted(home, env=faults("exit:startup")) as sim:
        assert await sim.exited() == 1
        assert await sim.rest() == []
        assert "exit:startup" in sim.diagnostics


async def _exits_at_handshake(home: Path) -> None:
    async with sim_hosted(home, env=faults("exit:handshake")) as sim:
        await sim.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        assert await sim.exited() == 1
        assert await sim.rest() == []


async def _exits_before_turn_start_is_answered(home: Path) -> None:
    async with sim_hosted(home, env=faults("exit-before-ack:turn/start")) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "hello")
        assert await sim.exited() == 1
        assert await sim.rest() == []


async def _exits_when_a_request_arrives(home: Path, point: str, method: str) -> None:
    async with sim_hosted(home, env=faults(f"exit:{point}")) as sim:
        await sim.initialize()
        session_id = await sim.start()
        request_id, turn_id = await sim.turn_start(session_id, "sim:hold", reasoningEffort="none")
        await sim.until(lambda frame: frame.get("id") == request_id)
        params = {
            "commandId": new_uuid7(),
            "sessionId": session_id,
            "expectedTurnId": turn_id,
            "input": [{"type": "text", "text": "go"}],
            "itemId": "x",
            "outputRef": "y",
        }
        await sim.send({"jsonrpc": "2.0", "id": 99, "method": method, "params": params})
        assert await sim.exited() == 1
        answers = [json.loads(line) for line in await sim.rest()]
        assert all(answer.get("id") != 99 for answer in answers)


async def _exits_when_a_question_is_asked(home: Path, run: Runner = sim_hosted) -> None:
    async with run(home, env=faults("exit:userInput")) as sim:
        await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "sim:ask", reasoningEffort="none")
        frames = await sim.until_method("userInput/requested")
        assert await sim.exited() == 1
        assert await sim.rest() == []
        assert "injected fault exit:userInput: exiting" in sim.diagnostics
        assert labels(frames)[-2:] == ["request userInput/request", "userInput/requested"]


async def test_an_exit_fault_ends_the_process_once_what_it_wrote_is_out(tmp_path: Path) -> None:
    # The process exits at once (nothing is flushed on the way out): what it wrote before, the
    # question and its notice, must already be on its stdout.
    await _exits_when_a_question_is_asked(tmp_path, sim_process)


async def test_exit_faults_end_the_host_where_they_say(tmp_path: Path) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(_exits_at_startup, tmp_path / "startup")
        group.start_soon(_exits_at_handshake, tmp_path / "handshake")
        group.start_soon(_exits_before_turn_start_is_answered, tmp_path / "before-ack")
        group.start_soon(_exits_when_a_request_arrives, tmp_path / "steer", "steer", "turn/steer")
        group.start_soon(
            _exits_when_a_request_arrives, tmp_path / "read", "readOutput", "item/readOutput"
        )
        group.start_soon(_exits_when_a_question_is_asked, tmp_path / "question")


async def test_a_hung_handshake_leaves_the_host_otherwise_responsive(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, env=faults("hang:handshake")) as sim:
        await sim.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "a", "version": "1"}},
            }
        )
        error = await sim.error("model/list")
        assert error["data"] == {"kind": "notInitialized"}
        with anyio.move_on_after(0.3):
            await sim.next()
            pytest.fail("the hung initialize was answered")


async def test_turn_start_faults_around_its_acknowledgement(tmp_path: Path) -> None:
    combined = faults("malformed:turn/start,oversized:turn/start,exit-after-ack:turn/start")
    async with sim_hosted(tmp_path, env=combined) as sim:
        await sim.initialize()
        session_id = await sim.start()
        request_id, _ = await sim.turn_start(session_id, "hello")
        events = [await sim.next(), await sim.next()]
        malformed = await sim.line()
        oversized = await sim.line()
        ack = await sim.next()
        assert await sim.exited() == 1
        rest = await sim.rest()
    assert labels(events) == ["turn/started", "item/completed"]
    assert isinstance(malformed, bytes)
    with pytest.raises(ValueError):  # noqa: PT011  # any JSON decoding error
        json.loads(malformed)
    assert isinstance(oversized, bytes)
    assert len(oversized) > 10 * 1024 * 1024
    assert ack["id"] == request_id
    assert rest == []


async def test_a_stderr_flood_precedes_serving_and_a_hung_turn_start_stays_unanswered(
    tmp_path: Path,
) -> None:
    size = 300_000
    async with sim_process(tmp_path, env=faults(f"stderr-flood:{size},hang-ack:turn/start")) as sim:
        result = await sim.initialize()
        session_id = await sim.start()
        await sim.turn_start(session_id, "hello")
        read, before = await sim.request("session/read", {"sessionId": session_id})
    assert result["serverInfo"]["name"] == "muse"
    assert len(sim.stderr) >= size
    assert before == []
    assert read["result"]["session"]["activeTurnId"] is None


async def test_slow_hosts_pace_their_events(tmp_path: Path) -> None:
    async with sim_hosted(tmp_path, env=faults("slow:40")) as sim:
        await sim.initialize()
        session_id = await sim.start()
        began = anyio.current_time()
        frames = await sim.turn(session_id, "a b", reasoningEffort="none")
        elapsed = anyio.current_time() - began
    events = [frame for frame in frames if "id" not in frame]
    assert elapsed >= 0.04 * len(events)


async def test_a_refused_command_is_rejected_and_leaves_the_session_as_it_was(
    tmp_path: Path,
) -> None:
    async with sim_hosted(tmp_path, env=faults("refuse:session/setModel")) as sim:
        await sim.initialize()
        session_id = await sim.start()
        params = {
            "commandId": new_uuid7(),
            "sessionId": session_id,
            "model": {"modelId": "muse-spark-1.2", "providerId": "meta"},
        }
        error = await sim.error("session/setModel", params)
        listed = await sim.call("model/list", {"sessionId": session_id})
    assert error["data"]["kind"] == "commandRejected"
    assert error["data"]["reason"] == "unsupported_route"
    active = [m["modelId"] for m in listed["models"] if m["isActive"]]
    assert active != ["muse-spark-1.2"]


def test_probing_the_simulator_loads_no_wire_model() -> None:
    # A client probes `--version` and `serve --help` before every start; those must stay cheap.
    script = (
        "import sys\n"
        "from muse_acp.sim.cli import main\n"
        "assert main(['--version']) == 0\n"
        "assert main(['serve', '--help']) == 0\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('muse_acp_wire.'))\n"
        "print(loaded)\n"
        "assert loaded in ([], ['muse_acp_wire.msp_bundles']), loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
