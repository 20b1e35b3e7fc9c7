"""The files of one exec backend run, and what a muse-acp that ended left of its runs.

Contract: ``exec_run(data_dir, images)`` yields an ``ExecRun``: a private folder under
``<data dir>/run/exec-runs`` holding the prompt's images, removed when the block ends, however it
ends; ``record(pid)`` notes the run's process there once it started. File work runs in a worker
thread within ``IO_BUDGET`` seconds. ``sweep(data_dir)``, run when the agent starts, kills the
process group of a run whose muse-acp no longer runs (only while its leader is provably that
process: a group whose leader is gone is left alone, since its id may have been reused) and
removes its folder; a record that is not a regular file is never read.

Errors: a folder that cannot be made is an ``RpcError`` (-32603, ``execRunUnprepared``) before
anything runs; a record that cannot be written is logged and the run goes on.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
import shutil
import signal
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Final

import anyio

from muse_acp.agent.errors.failures import Failure
from muse_acp.agent.hosting.private_files import off_loop, run_dir, sweep_ended
from muse_acp.files import read_regular
from muse_acp.rpc import RpcError
from muse_acp_wire import msp

__all__ = [
    "IO_BUDGET",
    "RECORD_FILE",
    "ExecRun",
    "exec_run",
    "runs_root",
    "start_time",
    "sweep",
]

logger: Final = logging.getLogger("muse_acp.agent")

IO_BUDGET: Final = 10.0
"""Seconds the folder's file work (making, writing, removing) may take."""
RECORD_FILE: Final = "process.json"
_RECORD_LIMIT: Final = 4096
"""Largest run record read; ours are a few dozen bytes."""
_RUNS: Final = "exec-runs"
_SUFFIXES: Final = MappingProxyType(
    {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}
)


def runs_root(data_dir: Path) -> Path:
    """Where this user's muse-acp processes keep their exec runs' folders."""
    return data_dir / "run" / _RUNS


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None if that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat_line = handle.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its end.
    fields = stat_line[stat_line.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])  # field 22, the start time
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class ExecRun:
    """One run's private folder and the images staged in it."""

    folder: Path
    images: list[str]

    async def record(self, pid: int) -> None:
        """Write the run's process to the folder, so a later start can stop it if need be."""
        try:
            await off_loop(partial(_record, self.folder / RECORD_FILE, pid), IO_BUDGET)
        except (OSError, TimeoutError) as error:
            logger.warning("could not record the exec run %d in %s: %s", pid, self.folder, error)


def _record(path: Path, pid: int) -> None:
    _write_private(path, json.dumps({"pid": pid, "startTime": start_time(pid)}).encode())


def _write_private(path: Path, content: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(content)


def _prepare(data_dir: Path, images: Sequence[msp.ImageTurnInputPart], made: list[ExecRun]) -> None:
    folder = run_dir(data_dir, _RUNS) / f"{os.getpid()}-{secrets.token_hex(8)}"
    folder.mkdir(mode=0o700)
    run = ExecRun(folder, [])
    made.append(run)  # from here on the folder is removed, whatever happens next
    os.chmod(folder, 0o700)  # mkdir's mode is cut by the umask
    for index, image in enumerate(images, start=1):
        path = folder / f"image-{index:02d}{_SUFFIXES.get(image.media_type, '')}"
        _write_private(path, base64.b64decode(image.base64_data, validate=True))
        run.images.append(str(path))


def _unprepared(root: Path, reason: str) -> RpcError:
    failure = Failure("execRunUnprepared", "adapter", retryable=True, phase="starting")
    return failure.error(
        f"muse-acp could not prepare the private folder of this exec run under {root} "
        f"({reason}); nothing was sent to Muse. Check that muse-acp's data directory is "
        "writable, then send the prompt again."
    )


@asynccontextmanager
async def exec_run(
    data_dir: Path, images: Sequence[msp.ImageTurnInputPart]
) -> AsyncIterator[ExecRun]:
    """A private folder for one run with ``images`` staged in it (see the module contract).

    Raises:
        RpcError: the folder could not be made or the images written in it.
    """
    root = runs_root(data_dir)
    made: list[ExecRun] = []
    try:
        try:
            await off_loop(partial(_prepare, data_dir, images, made), IO_BUDGET)
        except TimeoutError:  # an OSError too: caught first
            reason = f"its file system did not answer within {IO_BUDGET:g}s"
            raise _unprepared(root, reason) from None
        except OSError as error:
            raise _unprepared(root, error.strerror or str(error)) from None
        yield made[0]
    finally:
        with anyio.CancelScope(shield=True), suppress(TimeoutError):
            await off_loop(partial(_remove, made), IO_BUDGET)


def _remove(made: list[ExecRun]) -> None:
    for run in made:
        shutil.rmtree(run.folder, ignore_errors=True)


def _stop_group(folder: Path) -> None:
    try:
        # Opened non-blocking and only if regular, so a FIFO planted there is never waited on.
        saved = json.loads(read_regular(folder / RECORD_FILE, _RECORD_LIMIT) or b"")
        pid, started = int(saved["pid"]), saved["startTime"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # no record (the process had not started) or not one of ours
    if not isinstance(started, int) or pid <= 1:
        return
    current = start_time(pid)
    if current is None:
        # The group may live on without its leader, but its id could be another session's by
        # now: with no proof it is the run's, it is left alone.
        logger.info("left process group %d of an exec run alone: its leader is gone", pid)
        return
    if current != started:
        return  # the id belongs to another process now: the run's group is gone
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
        logger.info("stopped the process group %d of an exec run a muse-acp left running", pid)


def sweep(data_dir: Path) -> int:
    """Stop and remove the runs of muse-acp processes that no longer run; return how many.
    Blocking file work: run it off the event loop."""
    removed = sweep_ended(runs_root(data_dir), _stop_group)
    if removed:
        logger.info("removed %d exec runs left by muse-acp processes that ended", removed)
    return removed
