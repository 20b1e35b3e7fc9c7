"""``muse-sim exec --json``: one headless run, as Muse hosts without ``serve`` run a prompt.

Contract: ``run_exec`` plays the fake model of the prompt argument (the ``sim:`` directives of
``directives``, as a headless run can play them: docs/muse-sim.md) and writes its records to
stdout as JSON Lines, one envelope per line, built with the generated models of ``spec/exec``
(``muse_acp_wire.exec_jsonl``), ending with the reply and ``run.terminal.completed``. The exit
status is 0, 1 for a failed run, 101 for ``sim:crash``, and 143 or 130 for a run that SIGTERM or
SIGINT cancelled. With ``MUSE_SIM_CAPTURE`` set, one ``{"exec": {...}}`` line records the
process, flags, prompt and image files before the run. ``LEGACY_VERSIONS`` are the releases
that have ``exec`` but no ``serve``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from types import FrameType, MappingProxyType
from typing import Final

from muse_acp.sim.options.settings import CAPTURE_ENV
from muse_acp.sim.script.directives import (
    Approve,
    AskUser,
    Crash,
    Directive,
    Fail,
    Hold,
    Plan,
    Search,
    Shell,
    Stream,
    WebSearch,
    parse_prompt,
    split_text,
)
from muse_acp.sim.state.ids import new_call_id, new_uuid7, rfc3339_now
from muse_acp_wire import exec_jsonl

__all__ = ["MAX_RESULT_BYTES", "run_exec"]

MAX_RESULT_BYTES: Final = 1024 * 1024
OUTPUT_LINE: Final = "output-marker\n"
"""The line ``sim:bash`` output repeats, as on ``serve``."""
FAIL_REASONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "stepLimit": "the run reached its max model steps (25) before finishing",
        "authRequired": "provider authentication failed: 401 Unauthorized (check the API key)",
    }
)
_STOPPED: Final[Mapping[int, int]] = MappingProxyType({signal.SIGTERM: 143, signal.SIGINT: 130})


class _Run:
    """The records of one run, written as they happen."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.session_id = new_uuid7()
        self.sequence = 0

    def record(self, payload_type: str, payload: Mapping[str, object]) -> None:
        envelope = exec_jsonl.ExecEnvelope(
            schema_version=1,
            id=new_uuid7(),
            stream=exec_jsonl.ExecStream(kind="session", id=self.session_id),
            sequence=self.sequence,
            recorded_at=rfc3339_now(),
            record_type="event",
            durability="durable",
            causation_id=None,
            payload_type=payload_type,
            payload_schema_version=1,
            payload=dict(payload),
        )
        self.sequence += 1
        line = json.dumps(envelope.model_dump(mode="json"), separators=(",", ":"))
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def say(self, text: str) -> None:
        for piece in split_text(text):
            self.record("run.output.delta", exec_jsonl.OutputDeltaPayload(text=piece).model_dump())

    def intent(self, tool: str) -> str:
        call_id = new_call_id()
        payload = exec_jsonl.SideEffectIntentPayload(
            operation=f"tool:{tool}", idempotency_key=f"tool:{call_id}"
        )
        self.record("task.lifecycle.side_effect_intent", payload.model_dump(exclude_none=True))
        return call_id

    def result(self, call_id: str, tool: str, text: str, outcome: str = "success") -> None:
        payload = exec_jsonl.ToolResultPayload(
            call_id=call_id,
            text=text,
            correlation_facts=exec_jsonl.ToolCorrelationFacts(tool_name=tool, outcome=outcome),
        )
        self.record("tool.result", payload.model_dump(exclude_none=True))

    def shell(self, command: str, output: str) -> None:
        call_id = self.intent("bash")
        if self.args.disable_shell:
            self.result(call_id, "bash", "shell tools are disabled (--disable-shell)", "rejected")
            return
        result = {"command": command, "description": f"Run {command}", "output": output}
        self.result(call_id, "bash", json.dumps(result, ensure_ascii=False))

    def terminal(self, outcome: str, reason: str | None = None) -> None:
        payload = exec_jsonl.RunTerminalPayload(reason=reason)
        self.record(f"run.terminal.{outcome}", payload.model_dump())

    def wait_until_stopped(self) -> None:
        """Wait for SIGTERM or SIGINT, then stop as the handler does. The signals are blocked and
        taken (``sigwait``), not waited for with ``pause``: Python runs a handler between two
        instructions, so one arriving just before ``pause`` would be handled only once ``pause``
        returned, which nothing else would make it do."""
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPED)
        signum = signal.sigwait(_STOPPED)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPED)
        signal.raise_signal(signum)  # the handler records the cancel and exits

    def step(self, directive: Directive) -> int | None:
        """Play one directive; an exit status ends the run there."""
        if isinstance(directive, Shell):
            size = min(directive.size, MAX_RESULT_BYTES)
            output = (OUTPUT_LINE * (size // len(OUTPUT_LINE) + 1))[:size]
            self.shell(f"sim-output {directive.size}", output)
        elif isinstance(directive, Search | WebSearch):
            tool, query = (
                ("search", directive.pattern)
                if isinstance(directive, Search)
                else ("web_search", directive.query)
            )
            call_id = self.intent(tool)
            self.result(call_id, tool, f"1 match for {query}:\nREADME.md:1: {query}")
        elif isinstance(directive, Approve):
            return self.approve(directive.command)
        elif isinstance(directive, Stream):
            for index in range(directive.deltas):
                payload = exec_jsonl.OutputDeltaPayload(text=f"t{index} ")
                self.record("run.output.delta", payload.model_dump())
        elif isinstance(directive, Hold):
            self.wait_until_stopped()
        elif isinstance(directive, Fail):
            reason = FAIL_REASONS.get(directive.kind, f"the model failed ({directive.kind})")
            self.terminal("failed", reason)
            sys.stderr.write(f"muse: error: {reason}\n")
            return 1
        elif isinstance(directive, Crash):
            sys.stderr.write("muse: internal error: simulated crash\n")
            sys.stderr.flush()
            os._exit(101)
        elif isinstance(directive, AskUser | Plan):
            what = "ask you anything" if isinstance(directive, AskUser) else "publish a plan"
            self.say(f"(A headless run cannot {what}.) ")
        return None

    def approve(self, command: str) -> int | None:
        if self.args.disable_approval or self.args.disable_shell:
            self.shell(command, f"ran: {command}\n")
            return None
        call_id = self.intent("bash")
        payload = exec_jsonl.ApprovalWaitPayload(
            operation="tool:bash", idempotency_key=f"tool:{call_id}"
        )
        self.record("approval_wait.effect.started", payload.model_dump(exclude_none=True))
        self.wait_until_stopped()
        return None


def _capture(args: argparse.Namespace) -> None:
    target = os.environ.get(CAPTURE_ENV, "")
    if not target:
        return
    images = []
    for name in args.image:
        path = Path(name)
        info = path.stat()
        images.append(
            {
                "path": str(path),
                "bytes": info.st_size,
                "mode": stat.S_IMODE(info.st_mode),
                "dirMode": stat.S_IMODE(path.parent.stat().st_mode),
            }
        )
    flags = [
        flag
        for flag, on in (
            ("--json", args.json),
            ("--disable-write", args.disable_write),
            ("--disable-shell", args.disable_shell),
            ("--disable-approval", args.disable_approval),
        )
        if on
    ]
    document = {
        "exec": {
            "pid": os.getpid(),
            "flags": flags,
            "model": args.model,
            "reasoningEffort": args.reasoning_effort,
            "prompt": args.prompt,
            "images": images,
        }
    }
    with open(Path(target).absolute(), "a", encoding="utf-8") as handle:
        handle.write(json.dumps(document, ensure_ascii=False) + "\n")


def run_exec(args: argparse.Namespace) -> int:
    """Run ``muse-sim exec`` (see the module contract); returns the exit status."""
    if not args.json:
        sys.stderr.write("muse-sim: exec writes JSON Lines only; pass --json\n")
        return 2
    missing = [name for name in args.image if not Path(name).is_file()]
    if missing:
        sys.stderr.write(f"muse-sim: image {missing[0]!r} is not a readable file\n")
        return 2
    _capture(args)
    run = _Run(args)

    def stop(signum: int, _frame: FrameType | None) -> None:
        # A second signal during this handler would record the end twice.
        for other in _STOPPED:
            signal.signal(other, signal.SIG_IGN)
        run.terminal("cancelled", "stopped by a signal")
        sys.stdout.flush()
        os._exit(_STOPPED[signum])

    for signum in _STOPPED:
        signal.signal(signum, stop)
    prompt = parse_prompt(args.prompt)
    run.record("run.lifecycle.started", {"prompt": prompt.text})
    for directive in prompt.directives:
        status = run.step(directive)
        if status is not None:
            return status
    reply = f"You said: {prompt.text}"
    for name in args.image:
        reply += f"\n[image {Path(name).suffix.lstrip('.')}, {Path(name).stat().st_size} bytes]"
    run.say(reply)
    run.terminal("completed")
    return 0
