"""``muse-sim`` run inside the calling process: a ``host.launch.Launcher`` for tests and tools.

Contract: ``SimLauncher`` runs a ``muse`` command in process when its executable is a plain
``muse-sim`` launcher of this installation (``launcher.write_launcher`` with nothing fixed in
it, so the command's environment alone decides what it plays): ``--version``, ``serve --help``,
``skills list``, ``login`` and ``logout`` as ``cli.main`` runs them, and ``serve`` as a host
served over two pipes by the code of ``muse-sim serve`` (``serve.host.serve_streams``). A crash
the host would die of ends that host alone, with the exit status and stderr lines the process
would leave (``faults.EXIT_HOOK``). Closing its stdin ends it as the end of input ends a
process; one still running ``EXIT_GRACE`` seconds later is cancelled, as SIGTERM ends it, and one
cancelling does not end at once (finishing a frame on a full pipe: SIGTERM would not wait) has
its pipes shut under it (SIGKILL). Everything else (another executable, ``exec``, ``--replay``,
a stderr flood, a legacy version) is started as a real process (``host.launch.SUBPROCESSES``).
``arm(faults)`` hands a ``MUSE_SIM_FAULTS`` value to the next ``serve`` alone; ``served`` lists
every ``serve`` started.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import signal
import stat
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, redirect_stderr, redirect_stdout, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NoReturn

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from muse_acp.children import EXIT_GRACE, SETTLE_TIMEOUT
from muse_acp.host.launch import (
    STDERR_LINE_LIMIT,
    STDERR_TAIL_LINES,
    SUBPROCESSES,
    Completed,
    HostProcess,
    log_host_stderr,
)
from muse_acp.rpc.stdio import FdReceiveStream, FdSendStream
from muse_acp.sim.cli import ServeRefused, main, parser, serve_options
from muse_acp.sim.launcher import launcher_text
from muse_acp.sim.options.exec_args import legacy_version
from muse_acp.sim.options.faults import (
    EXIT_HOOK,
    FAULTS_ENV,
    FaultSyntaxError,
    exit_now,
    parse_faults,
)
from muse_acp.sim.options.settings import ServeOptions
from muse_acp.tasks import task_group

__all__ = ["Served", "SimLauncher"]

logger: Final = logging.getLogger("muse_acp.sim")

UNWIND_WAIT: Final = 0.5
"""Seconds a cancelled host gets to unwind (a few loop passes) before it counts as stuck."""
_SHORT_COMMANDS: Final = ({"--version"}, {"skills"}, {"login"}, {"logout"})


class _Crashed(BaseException):
    """The in-process host crashed (not an Exception: nothing on the way may catch it)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _close_fd(fd: int) -> None:
    """Close ``fd``, first waking any task still waiting on it (it then sees it closed)."""
    with suppress(OSError):
        anyio.notify_closing(fd)
        os.close(fd)


def _pipe() -> tuple[int, int]:
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    return read, write


class ServedHost:
    """A ``HostProcess`` served in this process (see the module contract)."""

    def __init__(self) -> None:
        self._host_in, stdin = _pipe()
        stdout, self._host_out = _pipe()
        self._stdin = FdSendStream(stdin, pollable=True, owned=True)
        self._stdout_fd = stdout
        self._stdout = FdReceiveStream(stdout, pollable=True)
        self._tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._returncode: int | None = None
        self._killed = False
        self.exited = anyio.Event()

    @property
    def pid(self) -> int:
        return os.getpid()

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout

    @property
    def returncode(self) -> int | None:
        return self._returncode

    def stderr_tail(self) -> str:
        return "\n".join(self._tail)

    async def settle(self) -> None:
        with anyio.move_on_after(SETTLE_TIMEOUT):
            await self.exited.wait()

    def _stderr(self, lines: Sequence[str]) -> None:
        """What the process would have written to stderr: kept and logged as a host's lines."""
        for line in lines:
            self._tail.append(line[:STDERR_LINE_LIMIT])
            log_host_stderr(line[:STDERR_LINE_LIMIT])

    def _crash(self, status: int, lines: Sequence[str]) -> NoReturn:
        self._stderr(lines)
        raise _Crashed(status)

    def end(self, status: int, lines: Sequence[str] = ()) -> None:
        """Record how the host ended and close its side of the pipes (the client's end of
        input); idempotent."""
        if self.exited.is_set():
            return
        self._stderr(lines)
        for fd in (self._host_in, self._host_out):
            _close_fd(fd)
        self._returncode = status
        self.exited.set()

    async def run(self, options: ServeOptions) -> None:
        """Serve MSP until the input ends or the host crashes (see the module contract)."""
        from muse_acp.sim.serve.host import serve_streams

        status = -signal.SIGTERM  # what cancellation stands for
        token = EXIT_HOOK.set(self._crash)
        try:
            if options.faults.exits_at("startup"):
                exit_now("exit:startup")
            receive = FdReceiveStream(self._host_in, pollable=True)
            send = FdSendStream(self._host_out, pollable=True)
            await serve_streams(options, receive, send)
            status = 0
        except* _Crashed as crashed:
            first = crashed.exceptions[0]
            status = first.status if isinstance(first, _Crashed) else 1
        except* Exception:
            if self._killed:
                status = -signal.SIGKILL  # its pipes were shut under it (``kill``)
            else:
                # What would kill the process: its traceback is the last thing it says.
                logger.exception("muse-sim failed")
                self._stderr(["muse-sim: an unexpected error ended the host (see the log)"])
                status = 1
        finally:
            EXIT_HOOK.reset(token)
            self.end(status)

    def kill(self) -> None:
        """End a host that cancellation did not end (a frame it must finish is stuck on a full
        pipe), as SIGKILL ends a process: its pipe ends become the null device (its writes go
        nowhere, its reads end), which also closes the pipes for its client, and any wait on
        them wakes."""
        self._killed = True
        null = os.open(os.devnull, os.O_RDWR)
        try:
            for fd in (self._host_in, self._host_out):
                with suppress(OSError):
                    anyio.notify_closing(fd)
                    os.dup2(null, fd)
        finally:
            os.close(null)

    async def release(self) -> None:
        """Close the client's side of the pipes, once the host ended."""
        await self._stdin.aclose()
        _close_fd(self._stdout_fd)


def _check_folder(cwd: str) -> None:
    """Raise the OSError starting a process in ``cwd`` would raise, if any."""
    if not stat.S_ISDIR(os.stat(cwd).st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), cwd)


@dataclass(eq=False)
class Served:
    """One ``serve`` a ``SimLauncher`` started: its host (in process or a process), the faults
    armed for it (None: the environment's), and whether its client still holds it (once the
    block ends the host has exited and is reaped)."""

    host: HostProcess
    armed: str | None
    held: bool = True


class SimLauncher:
    """Runs plain ``muse-sim`` launchers in process, anything else as a process."""

    def __init__(self) -> None:
        self._plain = launcher_text()
        self._armed: str | None = None
        self.served: list[Served] = []
        """Every ``serve`` started, oldest first."""

    def arm(self, faults: str) -> None:
        """Give ``faults`` (a ``MUSE_SIM_FAULTS`` value) to the next ``serve`` that starts, in
        place of its environment's, and to no other."""
        self._armed = faults

    @property
    def armed(self) -> str | None:
        """The faults armed and not yet taken by a ``serve``."""
        return self._armed

    def plays(self, executable: str) -> bool:
        """``executable`` is a plain ``muse-sim`` launcher of this installation."""
        try:
            return Path(executable).read_text(encoding="utf-8") == self._plain
        except (OSError, UnicodeDecodeError):
            return False

    def _in_process_options(
        self, argv: Sequence[str], env: Mapping[str, str] | None
    ) -> ServeOptions | str | None:
        """What an in-process ``serve`` runs with, the reason it cannot start (a usage error,
        as the process would exit 2 with it), or None to start a real process instead."""
        environ = os.environ if env is None else env
        if not self.plays(argv[0]) or legacy_version(environ) is not None:
            return None
        try:
            args = parser().parse_args(list(argv[1:]))
            flood = parse_faults(environ.get(FAULTS_ENV, "")).stderr_flood
        except (SystemExit, FaultSyntaxError):
            return None  # ``--help`` or a usage error: the process tells it best
        if args.replay is not None or flood:
            return None  # decided before ``serve_options``, which records the start
        try:
            return serve_options(args, environ)
        except ServeRefused as exc:
            return f"muse-sim: {exc}"

    @asynccontextmanager
    async def serve(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None
    ) -> AsyncIterator[HostProcess]:
        armed, self._armed = self._armed, None
        if armed is not None:
            env = {**(os.environ if env is None else env), FAULTS_ENV: armed}
        served: Served | None = None
        try:
            async with self._serve(argv, cwd=cwd, env=env) as host:
                served = Served(host, armed)
                self.served.append(served)
                yield host
        finally:
            if served is not None:
                served.held = False  # only now: leaving ``_serve`` ends and reaps the host

    @asynccontextmanager
    async def _serve(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None
    ) -> AsyncIterator[HostProcess]:
        chosen = self._in_process_options(argv, env)
        if chosen is None:
            async with SUBPROCESSES.serve(argv, cwd=cwd, env=env) as process:
                yield process
            return
        _check_folder(cwd)
        host = ServedHost()
        try:
            async with task_group() as tasks:
                if isinstance(chosen, str):
                    host.end(2, [chosen])
                else:
                    tasks.start_soon(host.run, chosen)
                try:
                    yield host
                finally:
                    with anyio.CancelScope(shield=True):
                        await host.stdin.aclose()
                        with anyio.move_on_after(EXIT_GRACE):
                            await host.exited.wait()
                        tasks.cancel_scope.cancel()  # SIGTERM
                        with anyio.move_on_after(UNWIND_WAIT):
                            await host.exited.wait()
                        if not host.exited.is_set():
                            host.kill()  # SIGKILL
        finally:
            with anyio.CancelScope(shield=True):
                await host.release()

    async def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        budget: float,
        limit: int,
    ) -> Completed:
        arguments = list(argv[1:])
        short = set(arguments[:1]) in _SHORT_COMMANDS or arguments[:2] == ["serve", "--help"]
        if not short or not self.plays(argv[0]):
            return await SUBPROCESSES.run(argv, cwd=cwd, env=env, budget=budget, limit=limit)
        stdout, stderr = io.StringIO(), io.StringIO()
        # These commands neither wait nor read input: they run to their end here, at once.
        with redirect_stdout(stdout), redirect_stderr(stderr):
            try:
                status = main(arguments, environ=env)
            except Exception:
                # A process would die of it, with its traceback on stderr and status 1.
                logger.exception("muse-sim %s failed", " ".join(arguments))
                status = 1
        out, err = stdout.getvalue().encode(), stderr.getvalue().encode()
        return Completed(status, out[:limit], err[:limit], max(len(out), len(err)) > limit)
