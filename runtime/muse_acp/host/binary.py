"""Finding the Muse executable and probing what it can do.

Contract: the executable comes from ``--muse PATH``, else ``MUSE_ACP_MUSE_BIN``, else ``muse``
on PATH; a bare name not on PATH is also looked for beside the interpreter and in this
installation's scripts folder (``installation_dirs``). ``probe`` runs ``--version`` and ``serve
--help`` once per binary, cached by path, size and modification time (``exec --help`` only when
asked). ``start_probe`` starts the probes before the agent has loaded, from a worker thread (the
agent goes on loading while they are spawned), for ``probe`` to collect;
``discard_early_probes`` reaps the uncollected. A missing or unusable binary is a
``HostUnavailable`` saying what to do about it.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

import anyio

from muse_acp.host.launch import SUBPROCESSES, Launcher
from muse_acp.rpc import INTERNAL_ERROR, RpcError

__all__ = [
    "EXEC_FLAGS",
    "PROBE_TIMEOUT",
    "SERVE_FLAGS",
    "HostUnavailable",
    "MuseBinary",
    "discard_early_probes",
    "installation_dirs",
    "probe",
    "probed",
    "resolve_binary",
    "start_probe",
]

logger: Final = logging.getLogger("muse_acp.host")

PROBE_TIMEOUT: Final = 10.0
"""Seconds ``--version`` and ``serve --help`` may take each."""

SERVE_FLAGS: Final = (
    "--disable-write",
    "--disable-shell",
    "--disable-sandbox",
    "--sandbox-network",
)
EXEC_FLAGS: Final = (
    "--json",
    "--image",
    "--disable-write",
    "--disable-shell",
    "--disable-approval",
    "--model",
    "--reasoning-effort",
)
"""The ``muse exec`` flags the exec backend may pass, each only when ``exec --help`` lists it."""
_VERSION: Final = re.compile(rb"(\d+\.\d+\.\d+)")
_FLAG: Final = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


class HostUnavailable(RpcError):
    """The Muse executable is missing or cannot serve MSP; the message says what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message, {"failure": {"kind": "hostUnavailable"}})


@dataclass(frozen=True, slots=True)
class MuseBinary:
    """A probed Muse executable."""

    path: str
    version: str | None
    """The first ``X.Y.Z`` that ``--version`` printed, or None when it printed none."""
    version_text: str
    serves: bool
    """``serve --help`` exited 0, so the binary speaks MSP over stdio."""
    serve_flags: frozenset[str]
    """The safety flags ``serve --help`` mentions."""
    exec_flags: frozenset[str] | None = None
    """The ``EXEC_FLAGS`` that ``exec --help`` lists (empty when it failed); None until probed."""

    @property
    def execs(self) -> bool:
        """``exec --help`` exited 0 and offers ``--json``: the legacy exec backend can run."""
        return self.exec_flags is not None and "--json" in self.exec_flags

    def require_serve(self) -> None:
        if not self.serves:
            raise HostUnavailable(
                f"the Muse executable {self.path} does not support `serve`; install a Muse Code "
                "release that does (1.1.1 or newer) or point MUSE_ACP_MUSE_BIN at one, or use "
                "the legacy exec backend (MUSE_ACP_BACKEND=exec)"
            )

    def require_exec(self) -> None:
        if not self.execs:
            raise HostUnavailable(
                f"the Muse executable {self.path} does not support `exec --json`, which the exec "
                "backend needs; choose the MSP backend (MUSE_ACP_BACKEND=msp) or point "
                "MUSE_ACP_MUSE_BIN at a Muse Code that has it"
            )

    def require_flags(self, flags: tuple[str, ...]) -> None:
        missing = [flag for flag in flags if flag.split("=")[0] not in self.serve_flags]
        if missing:
            raise HostUnavailable(
                f"the Muse executable {self.path} does not offer {', '.join(missing)}; "
                "choose the default mode or upgrade Muse Code"
            )


def installation_dirs() -> list[str]:
    """Folders holding this installation's commands: beside the interpreter, then its scripts."""
    folders = [os.path.dirname(sys.executable)] if sys.executable else []
    scripts = sysconfig.get_path("scripts")
    if scripts:
        folders.append(scripts)
    return list(dict.fromkeys(os.path.abspath(folder) for folder in folders if folder))


def _which(name: str) -> str | None:
    """``name`` on PATH, else beside the interpreter or in this installation's scripts folder."""
    found = shutil.which(name)
    if found is not None:
        return found
    for folder in installation_dirs():
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def resolve_binary(explicit: str | None) -> str:
    """Return an absolute path to the Muse executable, or raise HostUnavailable."""
    if explicit:
        candidate = explicit if os.sep in explicit else _which(explicit)
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
        raise HostUnavailable(
            f"the Muse executable {explicit!r} was not found or is not executable; fix "
            "--muse or MUSE_ACP_MUSE_BIN, or unset them to use `muse` from PATH"
        )
    found = _which("muse")
    if found is None:
        raise HostUnavailable(
            "no Muse executable found: install Muse Code so `muse` is on PATH, or set "
            "MUSE_ACP_MUSE_BIN (or --muse) to its path; `muse-sim` works for a trial"
        )
    return os.path.abspath(found)


PROBE_OUTPUT_LIMIT: Final = 65536
"""Bytes of each probe's output kept: a version line and a help text are far shorter."""


async def _run_probe(
    launcher: Launcher, env: Mapping[str, str] | None, path: str, *args: str
) -> tuple[int | None, bytes]:
    try:
        done = await launcher.run(
            [path, *args], cwd=None, env=env, budget=PROBE_TIMEOUT, limit=PROBE_OUTPUT_LIMIT
        )
    except OSError as exc:
        raise HostUnavailable(f"the Muse executable {path} could not be started: {exc}") from exc
    if done.status is None:
        logger.warning("%s %s did not finish within %.0fs", path, " ".join(args), PROBE_TIMEOUT)
        return None, b""
    return done.status, done.stdout + done.stderr


_cache: dict[tuple[str, int, int], MuseBinary] = {}

_PROBE_ARGS: Final = (("version", ("--version",)), ("help", ("serve", "--help")))

_early: dict[str, tuple[threading.Thread, dict[str, subprocess.Popen[bytes]]]] = {}
"""Probes started by ``start_probe``, by path: the thread spawning them and what it spawned,
waiting for ``probe`` to collect them."""


def start_probe(path: str) -> None:
    """Start ``path``'s ``--version`` and ``serve --help`` now, spawned from a worker thread;
    ``probe(path)`` collects them.

    A process that cannot be started is left out (``probe`` then starts it and reports why)."""
    if path in _early:
        return
    started: dict[str, subprocess.Popen[bytes]] = {}
    # Spawning waits for each child's exec (milliseconds a piece): the agent loads meanwhile.
    spawner = threading.Thread(
        target=_spawn_probes, args=(path, started), name="muse-acp-probes", daemon=True
    )
    _early[path] = (spawner, started)
    spawner.start()


def _spawn_probes(path: str, started: dict[str, subprocess.Popen[bytes]]) -> None:
    for name, args in _PROBE_ARGS:
        try:
            started[name] = subprocess.Popen(
                [path, *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError:
            continue


async def _collect_early(path: str) -> dict[str, subprocess.Popen[bytes]]:
    """The early probes of ``path``, once spawned, handed over once (none when there are
    none, or when spawning them overran ``PROBE_TIMEOUT``: ``discard_early_probes`` reaps
    those)."""
    entry = _early.get(path)
    if entry is None:
        return {}
    spawner, started = entry
    if spawner.is_alive():
        await anyio.to_thread.run_sync(spawner.join, PROBE_TIMEOUT)
        if spawner.is_alive():
            return {}
    return started if _early.pop(path, None) is entry else {}


def _finish(process: subprocess.Popen[bytes]) -> tuple[int | None, bytes]:
    """Wait (bounded) for an early probe, in a worker thread; kill it when it overruns."""
    try:
        stdout, stderr = process.communicate(timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        logger.warning("%s did not finish within %.0fs", process.args, PROBE_TIMEOUT)
        return None, b""
    return process.returncode, stdout + stderr


def discard_early_probes() -> None:
    """Kill and reap every early probe that was never collected."""
    while _early:
        _, (spawner, started) = _early.popitem()
        spawner.join(PROBE_TIMEOUT)
        for process in list(started.values()):
            process.kill()
            process.communicate()


async def _probe_exec(
    binary: MuseBinary, launcher: Launcher, env: Mapping[str, str] | None
) -> MuseBinary:
    code, output = await _run_probe(launcher, env, binary.path, "exec", "--help")
    offered = set(_FLAG.findall(output.decode("utf-8", "replace"))) if code == 0 else set()
    flags = frozenset(flag for flag in EXEC_FLAGS if flag in offered)
    logger.info("Muse executable %s: exec flags %s", binary.path, sorted(flags) or "none")
    return replace(binary, exec_flags=flags)


def probed(path: str) -> MuseBinary | None:
    """What an earlier ``probe`` of ``path`` in this process found, while the file is unchanged
    (None: not probed yet, or changed since); runs nothing."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _cache.get((path, stat.st_size, stat.st_mtime_ns))


async def probe(
    path: str,
    *,
    exec_help: bool = False,
    launcher: Launcher = SUBPROCESSES,
    env: Mapping[str, str] | None = None,
) -> MuseBinary:
    """Probe ``path`` once per (path, size, mtime), run by ``launcher`` in ``env`` (None: this
    process's); ``exec_help`` also probes ``exec --help``."""
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise HostUnavailable(f"the Muse executable {path} is not readable: {exc}") from exc
    key = (path, stat.st_size, stat.st_mtime_ns)
    cached = _cache.get(key)
    if cached is not None:
        if exec_help and cached.exec_flags is None:
            cached = _cache[key] = await _probe_exec(cached, launcher, env)
        return cached
    # The two probes run side by side: a client waits on them before its first answer.
    answers: dict[str, tuple[int | None, bytes]] = {}

    early = await _collect_early(path)

    async def run(name: str, *args: str) -> None:
        process = early.get(name)
        if process is None:
            answers[name] = await _run_probe(launcher, env, path, *args)
        else:
            answers[name] = await anyio.to_thread.run_sync(_finish, process)

    async with anyio.create_task_group() as probes:
        for name, args in _PROBE_ARGS:
            probes.start_soon(run, name, *args)
    _, version_output = answers["version"]
    match = _VERSION.search(version_output)
    help_code, help_output = answers["help"]
    help_text = help_output.decode("utf-8", "replace")
    binary = MuseBinary(
        path=path,
        version=match.group(1).decode() if match else None,
        version_text=version_output.decode("utf-8", "replace").strip()[:200],
        serves=help_code == 0,
        serve_flags=frozenset(flag for flag in SERVE_FLAGS if flag in help_text),
    )
    if exec_help:
        binary = await _probe_exec(binary, launcher, env)
    _cache[key] = binary
    logger.info("Muse executable %s: version %s, serve %s", path, binary.version, binary.serves)
    return binary
