"""A prompt turn on the legacy exec backend: one ``muse exec --json`` process per prompt.

Contract: ``run_exec_turn`` runs one prompt of a session whose connection uses the exec backend
(``muse_acp.host.backends``), occupying its ``SessionWork`` (``work.running``) so cancel, close
and logout reach it. The prompt's text becomes the one argument (at most ``MAX_PROMPT_BYTES``;
a prompt of images alone is refused, -32602) and its images go through the run's private folder
(``exec_runs``); the mode, model and effort become flags, and a flag ``exec --help`` does not
list is refused before anything runs (``HostUnavailable``). The process runs through
``spawn_child`` and is always reaped; its lines go through ``ExecTranslator``. A run that asks
for an approval fails the turn (``approval_unroutable``), unreadable output too
(``protocol_error``). A cancel stops the process group and resolves ``cancelled``; otherwise the
exit status decides (``exec_outcome``).
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from types import MappingProxyType
from typing import Final, Protocol

import anyio
from anyio.abc import TaskGroup

from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.failures import start_failed
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.hosting.exec_runs import exec_run
from muse_acp.agent.options.config_options import SessionSettings
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.exec_translate import (
    ExecFormatError,
    ExecTranslator,
    approval_unroutable,
    exec_outcome,
    protocol_error,
)
from muse_acp.agent.turns.relay import TurnOutlet
from muse_acp.agent.turns.work import SessionWork
from muse_acp.children import ChildProcess, spawn_child
from muse_acp.host.binary import HostUnavailable, MuseBinary
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp.tasks import task_group
from muse_acp.text import utf8_size
from muse_acp_wire import acp, msp

__all__ = [
    "EXIT_WAIT",
    "MAX_LINE_BYTES",
    "MAX_PROMPT_BYTES",
    "ExecSession",
    "ExecTurn",
    "exec_flags",
    "run_exec_turn",
    "split_prompt",
]

logger: Final = logging.getLogger("muse_acp.agent")

MAX_PROMPT_BYTES: Final = 128 * 1024 - 1
"""Largest prompt argument: Linux refuses a single argument of 128 KiB or more."""
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
"""Longest output line read; a longer one fails the turn (MSP frames are capped alike)."""
EXIT_WAIT: Final = 10.0
"""Seconds a run that closed its output may take to exit before it is stopped."""
KILL_WAIT: Final = 2.0
"""Seconds to wait for a killed run's exit status."""

_MODE_FLAGS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "readOnly": ("--disable-write", "--disable-shell"),
        "plan": ("--disable-write", "--disable-shell"),  # plans are read-only on every backend
        "autoApprove": ("--disable-approval",),
    }
)
"""Flags per session mode; Ask and Auto-reject add none (their approvals cannot be routed)."""
_MODE_NAMES: Final[Mapping[str, str]] = MappingProxyType(
    {"readOnly": "Read-only", "plan": "Plan", "autoApprove": "Auto-approve"}
)


class ExecSession(Protocol):
    """What an exec turn needs of its session (``session.AcpSession`` is one)."""

    @property
    def session_id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def outlet(self) -> TurnOutlet: ...


def split_prompt(parts: Sequence[msp.TurnInputPart]) -> tuple[str, list[msp.ImageTurnInputPart]]:
    """The prompt argument (text parts joined by blank lines) and the images, in order.

    Raises:
        RpcError: INVALID_PARAMS for a prompt without text or over ``MAX_PROMPT_BYTES``.
    """
    texts = [part.text for part in parts if isinstance(part, msp.TextTurnInputPart)]
    images = [part for part in parts if isinstance(part, msp.ImageTurnInputPart)]
    text = "\n\n".join(texts)
    if not text.strip():
        raise RpcError.invalid_params(
            "the exec backend needs some text with the images: `muse exec` takes no prompt "
            "without text; add a sentence saying what to do with them"
        )
    if "\0" in text or utf8_size(text) > MAX_PROMPT_BYTES:
        raise RpcError.invalid_params(
            f"the prompt is too long for the exec backend, which passes it as one command-line "
            f"argument of at most {MAX_PROMPT_BYTES} bytes (and without NUL characters); send "
            "less text, or use the MSP backend (Muse 1.1.1 or newer)"
        )
    return text, images


def exec_flags(settings: SessionSettings, binary: MuseBinary) -> tuple[str, ...]:
    """The ``muse exec`` flags for a turn in ``settings`` (see the module contract).

    Raises:
        HostUnavailable: the executable's ``exec`` does not offer a flag the settings need.
    """
    flags: list[str] = ["--json"]
    needs: list[tuple[str, str]] = []
    for flag in _MODE_FLAGS.get(settings.mode_id, ()):
        flags.append(flag)
        needs.append((flag, f"the {_MODE_NAMES[settings.mode_id]} mode"))
    if settings.model is not None:
        flags += ["--model", settings.model.model_id]
        needs.append(("--model", "the chosen model"))
    if settings.effort is not None:
        flags += ["--reasoning-effort", settings.effort]
        needs.append(("--reasoning-effort", "the chosen reasoning effort"))
    offered = binary.exec_flags or frozenset()
    for flag, purpose in needs:
        if flag not in offered:
            raise HostUnavailable(
                f"the Muse executable {binary.path} does not offer `exec {flag}`, which "
                f"{purpose} needs on the exec backend; choose the default, or upgrade Muse Code"
            )
    return tuple(flags)


class ExecTurn:
    """One ``muse exec --json`` run for a prompt (see the module contract)."""

    def __init__(
        self,
        session: ExecSession,
        binary: MuseBinary,
        flags: tuple[str, ...],
        *,
        cancel_budget: float,
        environ: Mapping[str, str],
    ) -> None:
        self._session = session
        self._binary = binary
        self.flags = flags
        self._cancel_budget = cancel_budget
        self._environ = environ
        self._translator = ExecTranslator()
        self.cancel_requested = False
        self._failure: RpcError | None = None
        self._child: ChildProcess | None = None
        self._tasks: TaskGroup | None = None
        self._ended = anyio.Event()
        """The run's output is closed (or, once stopping, the process is gone)."""
        self._pumped = anyio.Event()
        self._done = False
        self._stopping = False

    # -- cancelling and stopping ----------------------------------------------------------

    def request_cancel(self) -> None:
        """Stop the run (idempotent); the turn resolves ``cancelled`` soon after."""
        if self.cancel_requested or self._done:
            return
        self.cancel_requested = True
        self._stop()

    def _fail(self, error: RpcError) -> None:
        """Record ``error`` as the turn's outcome (unless one came first) and stop the run."""
        if self._failure is None and not self.cancel_requested:
            self._failure = error
        self._stop()

    def _stop(self) -> None:
        if self._stopping or self._tasks is None:
            return  # run() stops a process it starts after this, seeing the flag
        self._stopping = True
        self._tasks.start_soon(self._stop_flow)

    def _signal(self, signum: int) -> None:
        child = self._child
        if child is not None and child.returncode is None:
            # The child leads its own process group (spawn_child), so its tools stop too.
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signum)

    async def _stop_flow(self) -> None:
        child = self._child
        assert child is not None
        self._signal(signal.SIGTERM)
        with anyio.move_on_after(self._cancel_budget):
            await child.exited.wait()
        if not child.exited.is_set():
            logger.warning("muse exec did not stop within %gs; killing it", self._cancel_budget)
            self._signal(signal.SIGKILL)
            with anyio.move_on_after(KILL_WAIT):
                await child.exited.wait()
        self._ended.set()

    # -- running ----------------------------------------------------------------------------

    async def run(
        self,
        text: str,
        images: Sequence[str],
        started: Callable[[int], Awaitable[None]] | None = None,
    ) -> acp.StopReason:
        """Run the prompt ``text`` with the staged ``images`` until the process ended;
        ``started`` is told the process id once it runs.

        Raises:
            RpcError: the turn failed (``data.failure`` says how), or ``HostUnavailable``.
        """
        argv = [self._binary.path, "exec", *self.flags]
        for path in images:
            argv += ["--image", path]
        argv += ["--", text]
        logger.info("exec turn for %s: %s", self._session.session_id, " ".join(self.flags))
        try:
            async with spawn_child(
                argv, cwd=self._session.cwd, env=self._environ, on_line=_log_stderr
            ) as child:
                self._child = child
                async with task_group() as tasks:
                    self._tasks = tasks
                    if started is not None:
                        # Before any output is relayed: a client that saw the run start knows
                        # that a muse-acp killed from now on has it stopped at its next start.
                        await started(child.pid)
                    tasks.start_soon(self._pump, child)
                    if self.cancel_requested:
                        self._stop()
                    await self._ended.wait()
                    with anyio.move_on_after(EXIT_WAIT):
                        await child.exited.wait()
                    # A stopped run's output closes with it; let an update being sent finish.
                    with anyio.move_on_after(KILL_WAIT):
                        await self._pumped.wait()
                    tasks.cancel_scope.cancel()
        except OSError as error:  # running the executable, or entering the workspace
            raise start_failed(self._session.cwd, error) from None
        finally:
            self._tasks = None
            self._done = True
        # Read once the process is reaped: its exit status and every stderr line are in.
        code, stderr_tail = child.returncode, child.stderr_tail()
        why = "the turn was cancelled" if self.cancel_requested else "Muse reported no result"
        for update in self._translator.finish(why):
            await self._send(update)
        if self._translator.unreadable:
            unreadable = self._translator.unreadable
            logger.warning("muse exec wrote %d unreadable line(s)", unreadable)
            text = (
                f"`muse exec` wrote {unreadable} line(s) of output muse-acp could not read; "
                "what they held is not shown."
            )
            # Before notices this was only logged: a plain client still hears nothing of it.
            with suppress(ConnectionClosed):  # the client has gone: nobody to tell
                await self._session.outlet.tell(
                    Notice("warning", "Some of Muse's output was unreadable", text, chat=False)
                )
        if self._failure is not None:
            raise self._failure
        if self.cancel_requested:
            return "cancelled"
        outcome = exec_outcome(code, self._translator.terminal_reason, stderr_tail, self.flags)
        if isinstance(outcome, RpcError):
            raise outcome
        return outcome

    async def _pump(self, child: ChildProcess) -> None:
        """Relay the run's output, a line at a time, until it closes its output."""
        pending = bytearray()  # the start of a line whose end has not come yet
        try:
            async for chunk in child.stdout:
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    pending += chunk[start:end]
                    await self._line(bytes(pending))
                    pending.clear()
                    start = end + 1
                pending += chunk[start:]
                if len(pending) > MAX_LINE_BYTES:
                    self._fail(
                        protocol_error(
                            f"`muse exec` wrote a line longer than {MAX_LINE_BYTES} bytes"
                        )
                    )
                    return
            if pending:
                await self._line(bytes(pending))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            self._pumped.set()
            if not self._stopping:
                self._ended.set()

    async def _line(self, line: bytes) -> None:
        if self._stopping:
            return  # stopped: what the run still writes is not relayed
        try:
            updates = self._translator.on_line(line)
        except ExecFormatError as error:
            self._fail(protocol_error(str(error)))
            return
        for update in updates:
            await self._send(update)
        if self._translator.approval is not None:
            self._fail(approval_unroutable(self._translator.approval))

    async def _send(self, update: acp.SessionUpdate) -> None:
        if await self._session.outlet.send_unless_gone(update):
            logger.warning(
                "the client went away during an exec turn of session %s; stopping it",
                self._session.session_id,
            )
            self.request_cancel()


def _log_stderr(line: str) -> None:
    logger.debug("muse exec: %s", line)


async def run_exec_turn(
    ctx: AgentContext, session: AcpSession, work: SessionWork, parts: list[msp.TurnInputPart]
) -> acp.StopReason:
    """Run one prompt of ``session`` on the exec backend for ``work`` (see the contract)."""
    text, images = split_prompt(parts)
    choice = await ctx.backend()
    flags = exec_flags(session.settings, choice.binary)
    turn = ExecTurn(
        session,
        choice.binary,
        flags,
        cancel_budget=ctx.config.deadlines.cancel,
        environ=ctx.environ,
    )
    with work.running(turn):
        async with exec_run(ctx.config.data_dir, images) as run:
            if work.cancel_requested:
                return "cancelled"
            return await turn.run(text, run.images, run.record)
