"""Files the adapter reads or keeps for itself, handled so they never stall or expose it.

Contract: ``off_loop(work, budget)`` runs ``work`` in a
worker thread and gives up after ``budget`` seconds (``TimeoutError``), leaving a hung thread
behind rather than waiting. ``run_dir`` makes an owner-only ``<data dir>/run/<name>`` for what
lives only as long as a process. ``process_running`` says whether a process id exists;
``sweep_ended`` removes the ``<pid>-...`` folders of processes that ended. These functions block:
call them off the event loop.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Final, TypeVar

import anyio

__all__ = [
    "RUN_DIR",
    "off_loop",
    "process_running",
    "run_dir",
    "sweep_ended",
]

RUN_DIR: Final = "run"

_T = TypeVar("_T")


async def off_loop(work: Callable[[], _T], budget: float) -> _T:
    """``work()`` run in a worker thread, given up after ``budget`` seconds (``TimeoutError``)."""
    with anyio.fail_after(budget):
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)


def _private(path: Path, *, always: bool) -> None:
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        if not always:
            return
    os.chmod(path, 0o700)  # mkdir's mode is cut by the umask; this one must be exact


def run_dir(data_dir: Path, name: str) -> Path:
    """``<data dir>/run/<name>``, made owner-only (see the module contract).

    Raises:
        OSError: a directory could not be made or restricted.
    """
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    _private(data_dir, always=False)  # the user's own choice of mode for an existing one stays
    folder = data_dir / RUN_DIR / name
    _private(folder.parent, always=True)
    _private(folder, always=True)
    return folder


def process_running(pid: int) -> bool:
    """True when a process ``pid`` exists (one of another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, as another user's: not ours to judge
    return True


def sweep_ended(root: Path, step: Callable[[Path], None] | None = None) -> int:
    """Remove the folders of ended muse-acp processes under ``root`` (see the module contract),
    ``step`` run on each before it goes; return how many were removed."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return 0  # no such folder (nothing was ever left there) or none readable
    removed = 0
    for entry in entries:
        owner, _, _ = entry.name.partition("-")
        if not owner.isdigit() or int(owner) == os.getpid() or process_running(int(owner)):
            continue
        if entry.is_dir(follow_symlinks=False):
            if step is not None:
                step(Path(entry.path))
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
    return removed
