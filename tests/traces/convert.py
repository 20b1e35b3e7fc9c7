"""Recorded MSP conversations (official transcripts, captured host logs) made into traces.

Contract: ``python -m tests.traces.convert OUT VERSION SOURCE...`` reads each SOURCE (a transcript
folder or ``transcript.ndjson``, ``{"dir","raw"}`` lines; or a captured log, ``--> ``/``<-- ``
lines), derives the ACP side a client would have played to make muse-acp send the recorded
MSP requests (``plan_of``: a session for ``session/start``, a prompt with the turn's text for
``turn/start``, ``/goal ...`` for ``goal/*``, ``/compact``, the recorded approval choice and
question answers), and records it once (``convert``): muse-acp serves in this process, traced
(redacted), its catalog host played by muse-sim of VERSION, its session hosts by the recording
(``sim.serve.replay.Player``); the recording's own paths are then redacted as text is. The
trace is kept as ``OUT/<name>.jsonl`` only when the run was clean (no error answered,
muse-acp's MSP requests all in the recording) and it then checks with no difference
(``traces.check``); otherwise the reason is printed. A flow muse-acp cannot drive is refused
with why.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
from acp import schema

from muse_acp.config import load_config
from muse_acp.host.launch import HostProcess
from muse_acp.sim.in_process import SimLauncher
from muse_acp.sim.serve.replay import Transcript, transcript_of
from muse_acp.traces.check import check_trace
from muse_acp.traces.replay import ReplayLauncher, Trace, read_trace
from tests.agent_wire.harness import WAIT, Agent, make_world, running_agent
from tests.agent_wire.scenario_traced import FORMS, KEPT_ROOT

__all__ = ["Plan", "convert", "plan_of", "read_recording"]

OWN: Final = frozenset({"initialize", "initialized", "account/read", "model/list", "(response)"})
"""Requests muse-acp makes of every host by itself: no client action stands behind them."""

PROMPT_WAIT: Final = 10.0
"""Seconds a prompt may take to end while recording (a replayed host answers at once)."""

WHY: Final = {
    "session/resume": "muse-acp reopens a session by reading it first (session/read, view/page) "
    "on a host of its own, and the recording answers only session/resume",
    "view/subscribe": "muse-acp never subscribes to a view (view/subscribe): it follows the turns "
    "it starts and pages through a session it loads",
    "turn/interrupt": "muse-acp stops a turn with turn/cancel, never turn/interrupt",
    "session/userShell": "muse-acp never runs a user shell command (session/userShell)",
    "account/loginStart": "muse-acp never starts a sign-in on Muse (account/loginStart)",
}
"""Why muse-acp cannot be driven to send a recorded request, for those with more to say."""

GOAL_VERBS: Final = {"goal/set": "set", "goal/edit": "edit", "goal/pause": "pause",
                     "goal/resume": "resume", "goal/clear": "clear"}  # fmt: skip


@dataclass
class Plan:
    """What the ACP client does to make muse-acp replay a recording."""

    prompts: list[tuple[str, str]] = field(default_factory=list)
    """Each prompt, in order (in one session opened first), as our own words (a command) and
    the recording's text after them; the trace keeps the first and redacts the second."""
    choices: list[str] = field(default_factory=list)
    """The approval choices recorded, in order (each the ``choiceId`` muse-acp is to send)."""
    refused: str | None = None
    """Why muse-acp cannot drive this flow (None: it can)."""
    rest: str | None = None
    """Why the plan stops before the recording's end (None: it goes to the end)."""


def read_recording(path: Path) -> list[tuple[str, bytes]]:
    """A recording's ``(dir, raw)`` frames: ``client`` or ``server``, in order."""
    if path.is_dir():
        path = path / "transcript.ndjson"
    frames: list[tuple[str, bytes]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(("--> ", "<-- ")):
            frames.append(("client" if line[:3] == "-->" else "server", line[4:].encode()))
        elif line.strip():
            entry = json.loads(line)
            frames.append((entry["dir"], entry["raw"].rstrip("\r\n").encode()))
    return frames


def _text(params: Mapping[str, Any]) -> str:
    parts = params.get("input") or []
    return "\n".join(p.get("text", "") for p in parts if isinstance(p, dict)) or "(no text)"


def _why(method: str) -> str:
    return WHY.get(method, f"muse-acp never sends {method} to a session's host")


def plan_of(frames: Sequence[tuple[str, bytes]]) -> Plan:
    """The client's part behind the recorded client frames (see the module contract)."""
    plan = Plan()
    started = False
    for direction, raw in frames:
        if direction != "client":
            continue
        message = json.loads(raw)
        method = message.get("method", "(response)")
        params = message.get("params") or {}
        if method in OWN:
            if method == "initialize" and started:
                return Plan(refused="it holds a second connection of the same client")
            continue
        if method == "session/start":
            started = True
        elif not started:
            return Plan(refused=f"it opens with {method}: {_why(method)}")
        elif method == "turn/start":
            plan.prompts.append(("", _text(params)))
        elif method in GOAL_VERBS:
            objective = params.get("objective") or params.get("goal", {}).get("objective", "")
            plan.prompts.append((f"/goal {GOAL_VERBS[method]}", str(objective)))
        elif method == "session/compact":
            plan.prompts.append(("/compact", ""))
        elif method == "approval/decide":
            plan.choices.append(str(params.get("choiceId")))
        elif method != "userInput/answer":  # a question is answered by the client's form
            plan.rest = f"{method}: {_why(method)}"
            break
    if plan.rest is not None and not plan.prompts:
        return Plan(refused=plan.rest)
    if not started:
        return Plan(refused="no session is started in it")
    if not plan.prompts:
        return Plan(refused="muse-acp starts a session on Muse only for a prompt; it has none")
    return plan


class _Launcher(SimLauncher):
    """The first host (muse-acp's catalog) from muse-sim; each later one plays the recording."""

    def __init__(self, transcript: Transcript) -> None:
        super().__init__()
        copies = {f"recording{n}": transcript for n in range(1, 4)}
        self.replay = ReplayLauncher(Trace({}, hosts=copies), self)
        self.started = 0

    @asynccontextmanager
    async def serve(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None
    ) -> AsyncIterator[HostProcess]:
        self.started += 1
        if self.started == 1:
            async with super().serve(argv, cwd=cwd, env=env) as host:
                yield host
        else:
            async with self.replay.serve(argv, cwd=cwd, env=env) as host:
                yield host


def _policy(choices: list[str], errors: list[str]) -> Any:
    """Select each recorded choice in turn; one muse-acp does not offer is an error."""
    remaining = list(choices)

    def policy(request: schema.RequestPermissionRequest) -> schema.RequestPermissionResponse:
        wanted = remaining.pop(0) if remaining else None
        by_id = [o for o in request.options if o.option_id == wanted]
        if not by_id:
            errors.append(f"muse-acp asked for an approval with no option {wanted}")
        option = (by_id or list(request.options))[0]
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    return policy


async def _drive(agent: Agent, plan: Plan) -> list[str]:
    """Play ``plan``; the errors muse-acp answered, in our words."""
    agent.client.answer_elicitations = True
    errors: list[str] = []
    agent.client.policy = _policy(plan.choices, errors)
    with anyio.fail_after(WAIT):
        session = await agent.new_session()
    for number, words in enumerate(plan.prompts, 1):
        text = " ".join(part for part in words if part)
        with anyio.move_on_after(PROMPT_WAIT) as waited:
            try:
                answer = await agent.prompt(session, text)
            except Exception as error:  # the conversion says why; the run goes on
                errors.append(f"prompt {number} failed: {error}")
                continue
        if waited.cancelled_caught:
            after = f", its turn ending with {plan.rest}" if plan.rest else ""
            return [*errors, f"prompt {number} never ended (in the recording{after})"]
        if answer.stop_reason != "end_turn":
            errors.append(f"prompt {number} ended {answer.stop_reason}")
    return errors


def _placeholder(text: str) -> str:
    encoded = text.encode()
    return f"[text {len(encoded)} bytes #{hashlib.sha256(encoded).hexdigest()[:12]}]"


def _anonymised(value: Any) -> Any:
    """``value`` with each absolute path not of the kept folder redacted as text is (the
    recording machine's folders, user names among them)."""
    if isinstance(value, str):
        if value.startswith(("/", "~/")) and not value.startswith(KEPT_ROOT):
            return _placeholder(value)
        return value
    if isinstance(value, list):
        return [_anonymised(item) for item in value]
    if isinstance(value, dict):
        return {key: _anonymised(item) for key, item in value.items()}
    return value


def _kept(line: Any) -> Any:
    """A trace line as kept: the client's input (our own) as recorded, the rest anonymised."""
    return line if line.get("on") == "acp" and line.get("dir") == "in" else _anonymised(line)


def _keep_commands(lines: list[Any], prompts: list[tuple[str, str]]) -> None:
    """Put each prompt's command words back in the trace's (redacted) prompts, so the check
    sends muse-acp a command where the recording did; the text after them stays redacted."""
    words = iter(prompts)
    for line in lines:
        frame = line.get("frame") if line.get("on") == "acp" and line.get("dir") == "in" else None
        if not isinstance(frame, dict) or frame.get("method") != "session/prompt":
            continue
        command, text = next(words, ("", ""))
        if command:
            [block] = frame["params"]["prompt"]
            block["text"] = f"{command} {_placeholder(text)}" if text else command


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    return []


def _copied_text(frames: Sequence[tuple[str, bytes]], kept: str) -> str | None:
    """A text of the recording (words, not an identifier) that the trace kept, if any."""
    for _, raw in frames:
        for text in _strings(json.loads(raw)):
            if " " in text.strip() and json.dumps(text, ensure_ascii=False) in kept:
                return text
    return None


async def _checked(path: Path, version: str) -> str | None:
    """The first difference the check finds in the trace at ``path`` (None: none)."""
    trace = await anyio.to_thread.run_sync(read_trace, path)
    with tempfile.TemporaryDirectory() as scratch:
        world = make_world(Path(scratch), version=version)
        env = world.env(dict(os.environ))
        outcome = await check_trace(
            trace, load_config(env), env, SimLauncher(), cwd=str(world.workspace)
        )
    if outcome.first is not None:
        return outcome.first.describe()
    return "; ".join(outcome.host_departures) or None


async def convert(source: Path, version: str, out: Path) -> str:
    """Record ``source`` as ``out`` (see the module contract); what became of it."""
    frames = read_recording(source)
    plan = plan_of(frames)
    if plan.refused is not None:
        return f"not converted: {plan.refused}"
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        world = make_world(root, version=version)
        world.extra_env.update(
            {"MUSE_ACP_TRACE": "redacted", "MUSE_ACP_TRACE_DIR": str(root / "traces")}
        )
        launcher = _Launcher(transcript_of(frames))
        async with running_agent(world, capabilities=FORMS, launcher=launcher) as agent:
            errors = await _drive(agent, plan)
        departures = [  # a request the recorded client made of its own accord is no departure
            d
            for d in launcher.replay.departures()
            if d.split(" never sent ")[-1].split()[0] not in OWN
        ]
        if errors or departures:
            return "not converted: " + "; ".join([*errors, *departures])
        [trace] = (root / "traces").iterdir()
        text = trace.read_text(encoding="utf-8").replace(scratch, KEPT_ROOT)
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        # muse-acp's log lines may quote what the host said in words: not kept.
        lines = [line for line in lines if line.get("decision") != "log"]
        _keep_commands(lines, plan.prompts)
        kept = "".join(json.dumps(_kept(line), ensure_ascii=False) + "\n" for line in lines)
        candidate = root / "converted.jsonl"
        candidate.write_text(kept, encoding="utf-8")
        copied = _copied_text(frames, kept)
        if copied is not None:
            return f"not converted: the trace would keep the recording's text {copied!r}"
        difference = await _checked(candidate, version)
        if difference is not None:
            return f"not converted: its check fails: {difference}"
    await anyio.Path(out).write_text(kept, encoding="utf-8")
    return "converted" if plan.rest is None else f"converted up to {plan.rest}"


async def _main(folder: Path, version: str, sources: list[str]) -> None:
    for source in map(Path, sources):
        name = f"capture-{source.stem}" if source.is_file() else f"official-{source.name}"
        said = await convert(source, version, folder / f"{name}.jsonl")
        print(f"{name}: {said}")


if __name__ == "__main__":
    # python -m tests.traces.convert tests/fixtures/traces VERSION SOURCE...
    anyio.run(_main, Path(sys.argv[1]), sys.argv[2], sys.argv[3:])
