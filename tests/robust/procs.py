"""What ``/proc`` says of processes, with the standard library alone (Linux only).

The robustness tests whose claims are about processes ask "is this process gone", "which
processes has this one started" and "how many files does it hold" here; they call
``require_proc`` first, which skips them where there is no ``/proc``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import pytest

__all__ = ["children", "cmdline", "is_running", "open_fds", "require_proc"]

PROC: Final = Path("/proc")


def require_proc() -> None:
    """Skip the calling test where there is no Linux ``/proc`` to observe processes with."""
    if not (PROC / "self" / "stat").exists():
        pytest.skip("process checks read /proc, which only Linux provides")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name, or None when it is gone."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name is parenthesised and may itself hold spaces or parentheses.
    return raw[raw.rindex(")") + 2 :].split()


def is_running(pid: int) -> bool:
    """The process exists, running or as an unreaped zombie: either way it was left behind."""
    return _stat_fields(pid) is not None


def children(pid: int) -> list[int]:
    """The processes (zombies included) whose parent is ``pid``."""
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None and int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def open_fds(pid: int) -> int:
    """How many file descriptors ``pid`` holds open."""
    return len(os.listdir(PROC / str(pid) / "fd"))


def cmdline(pid: int) -> str:
    """The command line of ``pid``, or "(gone)"."""
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except (FileNotFoundError, ProcessLookupError):
        return "(gone)"
