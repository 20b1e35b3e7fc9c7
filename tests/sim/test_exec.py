"""``muse-sim exec --json``: the records it writes fit the project's schema for them, and its
directives, flags, exit statuses and the legacy version behave as documented.

What a run writes is checked on runs of the CLI's ``main`` in this process (``run_here``);
exit statuses, signals and the legacy version on runs of the executable (``run``).
"""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator

from muse_acp.host.binary import EXEC_FLAGS
from muse_acp.sim.cli import main

from .harness import WAIT
from .runs import sim_env

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "spec" / "exec" / "exec.schema.json").read_text()
)
TYPED = {
    "run.output.delta": "OutputDeltaRecord",
    "task.lifecycle.side_effect_intent": "SideEffectIntentRecord",
    "tool.result": "ToolResultRecord",
    "approval_wait.effect.started": "ApprovalWaitRecord",
}


def validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({**SCHEMA, "$ref": f"#/$defs/{definition}"})


def records(stdout: str) -> list[dict[str, Any]]:
    """Every line, checked against the envelope and (for typed records) its record schema."""
    found = [json.loads(line) for line in stdout.splitlines()]
    for record in found:
        validator("ExecEnvelope").validate(record)
        validator(TYPED.get(record["payload_type"], "UnknownExecRecord")).validate(record)
        if record["payload_type"].startswith("run.terminal."):
            validator("RunTerminalPayload").validate(record["payload"])
    assert [r["sequence"] for r in found] == list(range(len(found)))
    assert len({r["stream"]["id"] for r in found}) == 1
    return found


def run(home: Path, *args: str, version: str = "1.2.1") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "muse_acp.sim", *args],
        env=sim_env(home, version, None),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


def run_here(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``run`` as the CLI's ``main`` in this process, for runs that neither crash nor wait for
    a signal (the handlers ``exec`` sets are put back afterwards)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        with redirect_stdout(stdout), redirect_stderr(stderr):
            status = main(list(args), environ=sim_env(home, "1.2.1", None))
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    return subprocess.CompletedProcess(args, status, stdout.getvalue(), stderr.getvalue())


def test_the_schema_is_valid() -> None:
    Draft202012Validator.check_schema(SCHEMA)


def test_exec_help_lists_every_flag_the_backend_may_pass(tmp_path: Path) -> None:
    done = run_here(tmp_path, "exec", "--help")
    assert done.returncode == 0
    for flag in EXEC_FLAGS:
        assert flag in done.stdout


def test_the_legacy_version_has_exec_but_no_serve(tmp_path: Path) -> None:
    banner = run(tmp_path, "--version", version="0.2.1")
    assert banner.stdout == "muse 0.2.1-R1433.1 (simulated by muse-sim)\n"
    refused = run(tmp_path, "serve", "--help", version="0.2.1")
    assert refused.returncode == 2
    assert "has no `serve`" in refused.stderr
    assert run(tmp_path, "exec", "--json", "hi", version="0.2.1").returncode == 0


def test_a_tool_turn_writes_intents_results_and_the_reply(tmp_path: Path) -> None:
    done = run_here(tmp_path, "exec", "--json", "hello\nsim:bash 20\nsim:search needle\nsim:plan")
    assert done.returncode == 0
    found = records(done.stdout)
    kinds = [r["payload_type"] for r in found]
    assert kinds[0] == "run.lifecycle.started"
    assert kinds[-1] == "run.terminal.completed"
    intents = [r["payload"] for r in found if r["payload_type"].endswith("side_effect_intent")]
    assert [i["operation"] for i in intents] == ["tool:bash", "tool:search"]
    results = [r["payload"] for r in found if r["payload_type"] == "tool.result"]
    assert [f"tool:{r['call_id']}" for r in results] == [i["idempotency_key"] for i in intents]
    assert json.loads(results[0]["text"])["output"] == ("output-marker\n" * 2)[:20]
    text = "".join(r["payload"]["text"] for r in found if r["payload_type"] == "run.output.delta")
    assert text.endswith("You said: hello")
    assert "cannot publish a plan" in text


@pytest.mark.parametrize(
    ("directive", "status", "reason"),
    [
        ("sim:fail stepLimit", 1, "max model steps"),
        ("sim:fail authRequired", 1, "authentication failed"),
        ("sim:fail modelError", 1, "the model failed (modelError)"),
    ],
)
def test_failures_end_with_a_terminal_reason_and_status(
    tmp_path: Path, directive: str, status: int, reason: str
) -> None:
    done = run_here(tmp_path, "exec", "--json", directive)
    assert done.returncode == status
    last = records(done.stdout)[-1]
    assert last["payload_type"] == "run.terminal.failed"
    assert reason in last["payload"]["reason"]


def test_usage_errors_a_failure_and_a_crash_have_their_statuses(tmp_path: Path) -> None:
    assert run(tmp_path, "exec", "no json flag").returncode == 2
    assert run(tmp_path, "exec", "--json", "--image", "/nowhere.png", "x").returncode == 2
    assert run(tmp_path, "exec", "--json", "--bogus", "x").returncode == 2
    assert run(tmp_path, "exec", "--json", "sim:fail modelError").returncode == 1
    assert run(tmp_path, "exec", "--json", "sim:crash").returncode == 101


def test_approvals_wait_unless_disabled(tmp_path: Path) -> None:
    allowed = run_here(tmp_path, "exec", "--json", "--disable-approval", "sim:approve make")
    assert allowed.returncode == 0
    result = next(r for r in records(allowed.stdout) if r["payload_type"] == "tool.result")
    assert json.loads(result["payload"]["text"])["command"] == "make"
    refused = run_here(tmp_path, "exec", "--json", "--disable-shell", "sim:bash 5")
    result = next(r for r in records(refused.stdout) if r["payload_type"] == "tool.result")
    assert result["payload"]["correlation_facts"]["outcome"] == "rejected"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("signum", "status", "blocked"),
    [(signal.SIGTERM, 143, False), (signal.SIGINT, 130, False), (signal.SIGTERM, 143, True)],
)
async def test_a_stopped_run_records_its_cancellation(
    tmp_path: Path, signum: signal.Signals, status: int, blocked: bool
) -> None:
    """Stopped while it waits on an approval; ``blocked``: started with the signal blocked (a
    launcher's mask is inherited), so the signal stays pending, and the run takes it all the
    same."""
    command = [sys.executable, "-m", "muse_acp.sim", "exec", "--json", "sim:approve make"]
    if blocked:
        masked = f"import os, signal, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {{{signum}}}); "
        command = [sys.executable, "-c", masked + f"os.execv(sys.executable, {command!r})"]
    output = bytearray()
    with anyio.fail_after(WAIT):
        async with await anyio.open_process(
            command, env=sim_env(tmp_path, "1.2.1", None), stderr=subprocess.DEVNULL
        ) as process:
            assert process.stdout is not None
            signalled = False
            async for chunk in process.stdout:
                output += chunk
                waiting = b"approval_wait.effect.started" in output and output.endswith(b"\n")
                if waiting and not signalled:
                    process.send_signal(signum)
                    signalled = True
            assert await process.wait() == status
    found = records(output.decode())
    assert found[-2]["payload_type"] == "approval_wait.effect.started"
    assert found[-1]["payload_type"] == "run.terminal.cancelled"
