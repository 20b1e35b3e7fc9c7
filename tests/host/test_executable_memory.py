"""What muse-acp remembers of a Muse executable between starts: its probe while the file is
unchanged (written only when it changed), its catalog whatever happens to the file, nothing from
a file it cannot use."""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from muse_acp.host.binary import MuseBinary
from muse_acp.host.executable_memory import (
    Remembered,
    memory_dir,
    recall,
    remember_catalog,
    remember_probe,
)

CATALOG = {"models": [{"modelId": "muse-spark-1.2"}]}


def _muse(tmp_path: Path) -> MuseBinary:
    path = tmp_path / "muse"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return MuseBinary(
        path=str(path),
        version="1.4.2",
        version_text="muse 1.4.2",
        serves=True,
        serve_flags=frozenset({"--disable-shell"}),
    )


def test_a_probe_is_remembered_until_the_executable_changes_and_the_catalog_beyond(
    tmp_path: Path,
) -> None:
    muse = _muse(tmp_path)
    folder = memory_dir(tmp_path / "data")
    remember_probe(folder, muse)
    remember_catalog(folder, muse.path, CATALOG)
    assert recall(folder, muse.path) == Remembered(muse, CATALOG)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
    files = list(folder.iterdir())
    assert len(files) == 2  # the probe's and the catalog's
    assert all(stat.S_IMODE(file.stat().st_mode) == 0o600 for file in files)

    Path(muse.path).write_text("#!/bin/sh\n# updated\n")  # Muse was updated
    assert recall(folder, muse.path) == Remembered(None, CATALOG)
    assert recall(folder, str(tmp_path / "another-muse")) == Remembered()


def test_a_probe_remembered_already_is_not_written_again_and_any_change_is(
    tmp_path: Path,
) -> None:
    muse = _muse(tmp_path)
    folder = memory_dir(tmp_path / "data")
    remember_probe(folder, muse)
    file = next(folder.glob("*.probe.json"))

    def stamp() -> tuple[int, int]:
        found = file.stat()
        return found.st_ino, found.st_mtime_ns  # a write replaces the file: both change

    written = stamp()
    remember_probe(folder, muse)
    assert stamp() == written
    changes = (
        replace(muse, version="1.4.4", version_text="muse 1.4.4"),
        replace(muse, serve_flags=frozenset({"--disable-shell", "--read-only"})),
        replace(muse, exec_flags=frozenset({"--json"})),
    )
    for changed in changes:
        remember_probe(folder, changed)
        assert stamp() != written
        assert recall(folder, muse.path).probe == changed
        written = stamp()
    # The same probe of an updated executable: remembered for the file as it is now.
    Path(muse.path).write_text("#!/bin/sh\n# updated\n")
    assert recall(folder, muse.path).probe is None
    remember_probe(folder, changes[-1])
    assert stamp() != written
    assert recall(folder, muse.path).probe == changes[-1]


def test_a_file_that_cannot_be_used_is_nothing_remembered_and_is_replaced(tmp_path: Path) -> None:
    muse = _muse(tmp_path)
    folder = memory_dir(tmp_path / "data")
    remember_catalog(folder, muse.path, CATALOG)
    [file] = folder.iterdir()
    file.write_text('{"path": 12, "catalog": [')
    assert recall(folder, muse.path) == Remembered()
    remember_probe(folder, muse)
    assert recall(folder, muse.path) == Remembered(muse, None)
    assert not [name for name in os.listdir(folder) if name.endswith(".tmp")]  # none left behind


def test_a_probe_and_a_catalog_remembered_at_the_same_moment_are_both_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writes at once (the probe of a start settling, the catalog its first host listed,
    or another muse-acp's): the catalog is written while the probe's write is under way, and
    the next start still finds both."""
    muse = _muse(tmp_path)
    folder = memory_dir(tmp_path / "data")
    replace = os.replace
    pending = [lambda: remember_catalog(folder, muse.path, CATALOG)]

    def catalog_first(source: str, target: str) -> None:
        while pending:  # the catalog's write lands between the probe's read and its replace
            pending.pop()()
        replace(source, target)

    monkeypatch.setattr(os, "replace", catalog_first)
    remember_probe(folder, muse)
    assert not pending, "the catalog was written while the probe's write was under way"
    assert recall(folder, muse.path) == Remembered(muse, CATALOG)


def test_the_single_file_of_an_earlier_version_is_not_read_and_a_write_removes_it(
    tmp_path: Path,
) -> None:
    muse = _muse(tmp_path)
    folder = memory_dir(tmp_path / "data")
    remember_catalog(folder, muse.path, CATALOG)
    [catalog_file] = folder.iterdir()
    legacy = folder / catalog_file.name.replace(".catalog.json", ".json")
    legacy.write_text('{"path": "x", "catalog": {"models": []}}')
    assert recall(folder, muse.path) == Remembered(None, CATALOG)
    remember_probe(folder, muse)
    assert not legacy.exists()
    assert sorted(file.name for file in folder.iterdir()) == sorted(
        [catalog_file.name, catalog_file.name.replace(".catalog.", ".probe.")]
    )
