"""The one sweep of what muse-acp processes that ended left under ``run`` (settings overlays and
exec runs both use it): only the folders of processes that no longer run go, each after the
caller's step."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from muse_acp.agent.hosting.private_files import sweep_ended


def _ended_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


@pytest.fixture
def live_pid() -> Iterator[int]:
    """The id of another process that runs for the whole test (always reaped)."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait()


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    (folder / "inner").mkdir(parents=True)
    (folder / "inner" / "secret.json").write_text("{}")
    return folder


def test_only_folders_of_ended_processes_go_each_after_the_step(
    tmp_path: Path, live_pid: int
) -> None:
    root = tmp_path / "run" / "things"
    ended = _ended_pid()
    stale = [_folder(root, f"{ended}-0a1b"), _folder(root, f"{ended}-2c3d")]
    kept = [
        _folder(root, f"{live_pid}-0a1b"),  # a muse-acp that still runs
        _folder(root, f"{os.getpid()}-0a1b"),  # this process's own
        _folder(root, "notes"),
        _folder(root, f"x{ended}-0a1b"),
    ]
    (root / f"{ended}-file").write_text("not a folder")
    elsewhere = _folder(tmp_path, "elsewhere")
    (root / f"{ended}-link").symlink_to(elsewhere)
    seen: list[tuple[Path, bool]] = []

    def step(folder: Path) -> None:
        seen.append((folder, (folder / "inner" / "secret.json").exists()))

    assert sweep_ended(root, step) == 2
    assert sorted(seen) == sorted((folder, True) for folder in stale), "step before removal"
    assert not any(folder.exists() for folder in stale)
    assert all(folder.exists() for folder in kept)
    assert (root / f"{ended}-file").exists()
    assert (elsewhere / "inner" / "secret.json").exists(), "a link was followed"


def test_without_a_step_or_a_folder(tmp_path: Path) -> None:
    root = tmp_path / "run"
    stale = _folder(root, f"{_ended_pid()}-0a1b")
    assert sweep_ended(root) == 1
    assert not stale.exists()
    assert sweep_ended(tmp_path / "missing") == 0
