"""Shared pytest configuration for muse-acp's tests.

A run must leave nothing in the clone but the caches the tools keep there (bytecode, pytest's,
hypothesis's, mypy's, ruff's, nox's environments, coverage data): tests write under
``tmp_path``. The untracked and ignored paths ``git status`` reports when the run starts and
when it ends are compared, and a run that left anything else behind fails, naming it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Final

import pytest

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
CACHES: Final = frozenset(
    {"__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache", ".nox", ".venv"}
)
"""Ignored folders the tools keep in the clone on purpose."""

RAM_TEMP: Final = Path("/dev/shm")
"""A folder in memory, where the tests' temporary folders go when it is roomy (``RAM_TEMP_FREE``):
every test makes, writes and removes a world of small files, and on a disk each of those steps
may wait for it (a disk mounted with ``discard`` trims at every removal)."""
RAM_TEMP_FREE: Final = 2 << 30
"""Bytes ``RAM_TEMP`` must have free (a container's default of 64 MiB would not hold one test)."""


def _roomy(folder: Path) -> bool:
    try:
        stats = os.statvfs(folder)
    except OSError:
        return False
    if stats.f_flag & os.ST_NOEXEC:
        return False  # the tests' worlds run the Muse launcher they write there
    return os.access(folder, os.W_OK | os.X_OK) and stats.f_bavail * stats.f_frsize >= RAM_TEMP_FREE


# Bytecode is written, whatever the environment says (as ``nox -s tests`` does): with it off
# (PYTHONDONTWRITEBYTECODE), every worker would rewrite and compile each test module again at
# every run, and every muse-acp or muse-sim process a test starts would compile what it imports.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# pytest's own variable for where its temporary folders go; a user's own choice (it, TMPDIR or
# ``--basetemp``) stands.
chosen = {"PYTEST_DEBUG_TEMPROOT", "TMPDIR"}.intersection(os.environ)
if not chosen and _roomy(RAM_TEMP):
    os.environ["PYTEST_DEBUG_TEMPROOT"] = str(RAM_TEMP)

_before = pytest.StashKey[frozenset[str] | None]()
_left = pytest.StashKey[list[str]]()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def clone_status() -> frozenset[str] | None:
    """The untracked and ignored paths ``git status`` reports (``?? path``, ``!! path``), or
    None outside a clone. Changes to tracked files are not counted: an editor makes those."""
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain=v1", "-z", "--ignored", "--untracked-files=normal"],
            cwd=REPO_ROOT,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    entries = done.stdout.decode(errors="replace").split("\0")
    return frozenset(entry for entry in entries if entry[:3] in ("?? ", "!! "))


def is_cache(entry: str) -> bool:
    """Whether a status entry is an ignored cache (see ``CACHES``) or coverage data."""
    path = PurePosixPath(entry[3:])
    return entry.startswith("!! ") and (
        bool(CACHES.intersection(path.parts))
        or path.name.endswith(".egg-info")
        or path.name.startswith(".coverage")
    )


def _related(path: Path, folder: Path) -> bool:
    path = path.resolve()
    return path.is_relative_to(folder) or folder.is_relative_to(path)


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")  # xdist workers run the same session hooks


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    if _is_controller(session.config):
        session.config.stash[_before] = clone_status()


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_before, None)
    after = clone_status() if before is not None else None
    if before is None or after is None:
        return
    given = session.config.option.basetemp  # a --basetemp in the clone is the user's choice
    chosen = Path(given).resolve() if given else None
    left = sorted(
        entry
        for entry in after - before
        if not is_cache(entry) and not (chosen and _related(REPO_ROOT / entry[3:], chosen))
    )
    session.config.stash[_left] = left
    if left and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    left = terminalreporter.config.stash.get(_left, [])
    if left:
        terminalreporter.section("left in the clone", sep="=", red=True)
        terminalreporter.write_line("The run left these behind (tests write under tmp_path):")
        for entry in left:
            terminalreporter.write_line(f"  {entry}")
