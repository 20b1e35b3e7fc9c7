"""``muse-acp demo``: a scripted conversation through the client library, printed for people.

Contract: ``run_demo`` starts ``muse-acp serve`` as a child process with ``muse-sim`` as its
Muse host (or the executable given as ``muse``), in a scratch home (the simulator's state, the
adapter's data and a workspace, all in one temporary directory that is removed afterwards).
It first probes that Muse as an earlier start of muse-acp would have (so ``initialize`` knows
its version, ``host.executable_memory``) and prints the version the host reports in an MSP
handshake of its own, then runs four
exchanges and prints them as they happen: a plain text reply, a tool call whose long output Muse
truncated, a command that needs permission (answered by the ``allow_once`` policy), and a plan.
It returns 0 when all four turns ended normally and 1, after a one-paragraph explanation, when
anything failed. The demo is not a protocol process, so it prints to stdout; colour is used only
when stdout is a terminal.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final, TextIO

import anyio

from muse_acp.client import (
    AgentConnection,
    Session,
    allow_once,
    connect,
    extensions,
    forward_to_stderr,
    message_text,
    output_ref,
)
from muse_acp.config import load_config
from muse_acp.host.binary import HostUnavailable, probe, resolve_binary
from muse_acp.host.client import open_host
from muse_acp.host.executable_memory import memory_dir, remember_probe
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp.sim.launcher import SimWorld, sim_launcher
from muse_acp_wire import acp

__all__ = ["REAL_PROMPTS", "SIM_PROMPTS", "run_demo"]

SIM_VERSION: Final = "1.2.1"
SIM_TIMEOUT: Final = 60.0
REAL_TIMEOUT: Final = 600.0
"""A real model can take minutes over four turns; the simulator takes seconds."""
HOST_TIMEOUT: Final = 30.0
"""Seconds the Muse host may take to answer the handshake that reads its version."""
PREVIEW_LINES: Final = 2
PREVIEW_CHARS: Final = 100
_NOTE: Final = re.compile(r"^\[.+\]$")

SIM_PROMPTS: Final[tuple[str, str, str, str]] = (
    "Hello from the muse-acp demo!",
    "sim:bash 20000",
    "sim:approve ls -la",
    "sim:plan",
)
"""What the demo asks ``muse-sim``: its fake model acts on these directives."""
REAL_PROMPTS: Final[tuple[str, str, str, str]] = (
    "Say hello to the muse-acp demo in one short sentence.",
    "Run `yes output-marker | head -c 20000` in the shell and say how many bytes it printed.",
    "Run `ls -la` in the workspace and summarise what you see in one sentence.",
    "Write a three-step plan for tidying up this workspace, then stop without doing it.",
)
"""The same four exchanges, worded for a real Muse model."""

_PLAN_MARKS: Final[Mapping[str, str]] = MappingProxyType(
    {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
)


@dataclass(frozen=True, slots=True)
class _Style:
    """How the transcript looks: ANSI emphasis only on a terminal."""

    colour: bool

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def good(self, text: str) -> str:
        return self._wrap("32", text)


class _Transcript:
    """Writes the demo's lines to stdout as they happen."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.style = _Style(colour=stream.isatty())

    def prefix(self, label: str) -> str:
        return "  " + self.style.dim(label.ljust(8))

    def line(self, label: str = "", text: str = "") -> None:
        self.write(f"{self.prefix(label)}{text}\n")

    def write(self, text: str) -> None:
        try:
            self._stream.write(text)
        except UnicodeEncodeError:
            # A terminal without UTF-8 still gets the transcript, with placeholders.
            encoding = self._stream.encoding or "ascii"
            self._stream.write(text.encode(encoding, "replace").decode(encoding))
        self._stream.flush()

    def heading(self, text: str) -> None:
        self.write(f"\n{self.style.bold(text)}\n")


def _environment(world: SimWorld, real: bool) -> dict[str, str]:
    level = logging.getLevelName(logging.getLogger().getEffectiveLevel()).lower()
    env = world.settings()
    env["MUSE_ACP_LOG"] = level if level in ("debug", "info", "warning", "error") else "error"
    if real:
        del env["MUSE_SIM_VERSION"]  # a simulator given by path plays its own version
    else:
        env.update(MUSE_SIM_FAULTS="", MUSE_SIM_CAPTURE="")
    return env


def _preview(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line and not _NOTE.match(line)]
    shown = [line[:PREVIEW_CHARS] for line in lines[:PREVIEW_LINES]]
    if len(lines) > PREVIEW_LINES:
        shown.append(f"… {len(lines) - PREVIEW_LINES} more lines on the card")
    return shown


def _card_text(card: acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate) -> str:
    return "".join(
        part.content.text
        for part in card.content or []
        if isinstance(part, acp.ContentToolCallContent)
        and isinstance(part.content, acp.TextContentBlock)
    )


class _Demo:
    """The four exchanges, each printing what it saw."""

    def __init__(self, out: _Transcript) -> None:
        self.out = out
        self.asked = 0

    def on_permission(self, request: acp.RequestPermissionRequest) -> acp.RequestPermissionResponse:
        self.asked += 1
        raw = request.tool_call.raw_input
        command = raw.get("command") if isinstance(raw, dict) else None
        title = request.tool_call.title or "a tool call"
        self.out.line("asked", f"permission for “{title}”" + (f": {command}" if command else ""))
        self.out.line("", "options: " + " · ".join(option.name for option in request.options))
        response = allow_once(request)
        outcome = response.outcome
        picked = [
            option.name
            for option in request.options
            if isinstance(outcome, acp.SelectedRequestPermissionOutcome)
            and option.option_id == outcome.option_id
        ]
        choice = picked[0] if picked else "cancel (no allow-once option was offered)"
        self.out.line("chose", self.out.style.good(f"{choice}  (the allow_once policy)"))
        return response

    async def turn(
        self, session: Session, prompt: str, show: Callable[[acp.SessionUpdate], None] | None = None
    ) -> list[acp.SessionUpdate]:
        self.out.line("you", prompt)
        updates: list[acp.SessionUpdate] = []
        async for update in session.prompt(prompt):
            updates.append(update)
            if show is not None:
                show(update)
        if session.stop_reason != "end_turn":
            raise RpcError.internal_error(f"the turn ended with {session.stop_reason}")
        return updates

    async def plain(self, session: Session, prompt: str) -> None:
        self.out.heading("1. A plain exchange: the reply streams in as it is written")
        started = False

        def show(update: acp.SessionUpdate) -> None:
            nonlocal started
            text = message_text(update)
            if text is not None:
                if not started:
                    self.out.write(self.out.prefix("muse"))
                    started = True
                self.out.write(text)

        await self.turn(session, prompt, show)
        self.out.write("\n" if started else "")
        if not started:
            self.out.line("muse", "(no text this time)")

    def cards(self, updates: list[acp.SessionUpdate]) -> None:
        latest: dict[str, acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate] = {}
        titles: dict[str, tuple[str, str]] = {}
        statuses: dict[str, list[str]] = {}
        for update in updates:
            if isinstance(update, acp.ToolCallSessionUpdate | acp.ToolCallUpdateSessionUpdate):
                card_id = update.tool_call_id
                title, kind = titles.get(card_id, ("a tool call", "other"))
                titles[card_id] = (update.title or title, update.kind or kind)
                if update.content is not None or card_id not in latest:
                    latest[card_id] = update
                if update.status and statuses.setdefault(card_id, [""])[-1] != update.status:
                    statuses[card_id].append(update.status)
        if not latest:
            self.out.line("tool", "(no tool call this time)")
        for card_id, card in latest.items():
            title, kind = titles[card_id]
            flow = " → ".join(status for status in statuses.get(card_id, []) if status)
            self.out.line("tool", f"{self.out.style.bold(title)}  [{kind}]  {flow}")
            text = _card_text(card)
            for line in _preview(text):
                self.out.line("", self.out.style.dim(line))
            for note in [line for line in text.splitlines() if _NOTE.match(line)]:
                self.out.line("note", note)
        for ref in dict.fromkeys(ref for ref in map(output_ref, updates) if ref is not None):
            size = f"{ref.byte_len:,} bytes" if ref.byte_len is not None else "the bytes"
            self.out.line("stored", f"all {size} are kept by Muse (the card's muse/output entry)")

    async def tool(self, session: Session, prompt: str) -> None:
        self.out.heading("2. A tool call whose long output Muse truncated on the card")
        self.cards(await self.turn(session, prompt))

    async def permission(self, session: Session, prompt: str) -> None:
        self.out.heading("3. A command that needs permission")
        updates = await self.turn(session, prompt)
        if not self.asked:
            self.out.line("asked", "(no permission was needed this time)")
        self.cards(updates)

    async def plan(self, session: Session, prompt: str) -> None:
        self.out.heading("4. A plan, shown as a checklist")
        plans = [
            u for u in await self.turn(session, prompt) if isinstance(u, acp.PlanSessionUpdate)
        ]
        if not plans:
            self.out.line("plan", "(no plan this time)")
        for index, entry in enumerate(plans[-1].entries if plans else []):
            mark = _PLAN_MARKS.get(entry.status, "[ ]")
            self.out.line("plan" if index == 0 else "", f"{mark} {entry.content}")


async def _converse(out: _Transcript, env: dict[str, str], workspace: str, real: bool) -> None:
    demo = _Demo(out)
    path = env["MUSE_ACP_MUSE_BIN"]
    async with open_host(
        path, cwd=workspace, env={**os.environ, **env}, startup_timeout=HOST_TIMEOUT
    ) as host:
        version = host.version
    what = "" if real else ", the simulator bundled with muse-acp"
    out.line("host", f"Muse {version} ({path}{what})")
    out.line("…", "starting muse-acp serve")
    started = time.monotonic()
    stderr = forward_to_stderr if env["MUSE_ACP_LOG"] == "debug" else _ignore
    async with connect(
        env=env,
        cwd=workspace,
        capabilities=extensions(),
        on_permission=demo.on_permission,
        on_stderr=stderr,
    ) as agent:
        elapsed = time.monotonic() - started
        out.line("ready", f"connected to {_agent_name(agent)} in {elapsed:.1f}s")
        session = await agent.new_session(workspace)
        out.line("session", f"{session.session_id} in a scratch workspace")
        prompts = REAL_PROMPTS if real else SIM_PROMPTS
        await demo.plain(session, prompts[0])
        await demo.tool(session, prompts[1])
        await demo.permission(session, prompts[2])
        await demo.plan(session, prompts[3])
        await agent.close_session(session.session_id)


def _ignore(line: str) -> None:
    """The agent's stderr is kept for the failure report, not shown during the demo."""


def _agent_name(agent: AgentConnection) -> str:
    info = agent.initialize_response.agent_info
    name = f"{info.name} {info.version}" if info else "the agent"
    return f"{name} over ACP v{agent.initialize_response.protocol_version}"


def _failure(error: BaseException, real: bool) -> str:
    if isinstance(error, HostUnavailable):
        return f"The demo could not start: {error.message}."
    if isinstance(error, TimeoutError):
        reason = "the conversation took longer than the demo allows"
    elif isinstance(error, RpcError):
        reason = f"{error.message.rstrip('.')} (error {error.code})"
    elif isinstance(error, ConnectionClosed):
        reason = error.message.rstrip(".")
    else:
        reason = str(error) or type(error).__name__
    hint = (
        "Check the executable with `muse-acp doctor --muse PATH`."
        if real
        else "muse-acp and its bundled simulator should always manage this, so please report it "
        "with the output of `muse-acp demo --log-level debug`."
    )
    tail = getattr(error, "stderr_lines", ())
    last = f" The agent's last words: {' / '.join(tail[-3:])}." if tail else ""
    return f"The demo could not finish: {reason}. {hint}{last}"


async def _remember_muse(env: Mapping[str, str]) -> None:
    """Leave in the scratch data directory what a start of muse-acp remembers of its Muse."""
    config = load_config(env)
    binary = await probe(resolve_binary(config.muse_bin), env=env)
    folder = memory_dir(config.data_dir)
    await anyio.to_thread.run_sync(remember_probe, folder, binary, abandon_on_cancel=True)


def run_demo(muse: str | None) -> int:
    """Run the demo (see the module contract); returns the exit status."""
    out = _Transcript(sys.stdout)
    real = muse is not None
    out.write(out.style.bold("muse-acp demo") + ": a scripted conversation with an ACP agent\n")
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="muse-acp-demo-") as scratch:
            home = Path(scratch)
            muse_bin = Path(resolve_binary(muse)) if muse else sim_launcher(home)
            world = SimWorld.make(home, SIM_VERSION, muse_bin=muse_bin)
            env = _environment(world, real)

            async def main() -> None:
                with anyio.fail_after(REAL_TIMEOUT if real else SIM_TIMEOUT):
                    await _remember_muse(env)
                    await _converse(out, env, str(world.workspace), real)

            anyio.run(main)
    except (RpcError, ConnectionClosed, OSError, TimeoutError) as error:
        out.write("\n" + _failure(error, real) + "\n")
        return 1
    elapsed = time.monotonic() - started
    out.write(f"\n{out.style.good('Done')} in {elapsed:.1f}s; the scratch home was removed.\n")
    return 0
