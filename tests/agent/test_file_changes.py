"""What an editing tool's file held before it ran: read bounded, inside the workspace only."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Final

import anyio
import pytest

from muse_acp.agent.cards import file_changes
from muse_acp.agent.cards.file_changes import (
    FILE_TEXT_LIMIT_BYTES,
    FileBefore,
    absolute_path,
    capture_before,
    edit_path,
    read_before,
)

pytestmark = pytest.mark.anyio

OUTSIDE: Final = (
    "[This file is outside the session's workspace; muse-acp does not read files there, so no "
    "diff is shown.]"
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.mark.parametrize(
    ("cwd", "path", "absolute"),
    [
        ("/w", "a.txt", "/w/a.txt"),
        ("/w", "./src/../a.txt", "/w/a.txt"),
        ("/w", "/etc/passwd", "/etc/passwd"),
        ("/w/sub", "../../a.txt", "/a.txt"),
        (None, "a.txt", "a.txt"),
        (None, "/x//y", "/x/y"),
    ],
)
def test_paths_are_made_absolute_against_the_workspace(
    cwd: str | None, path: str, absolute: str
) -> None:
    assert absolute_path(cwd, path) == absolute


@pytest.mark.parametrize(
    ("tool", "fields", "path"),
    [
        ("write_file", {"path": "a.txt", "content": "c"}, "a.txt"),
        ("edit_file", {"path": "a.txt", "find": "x", "replace": "y"}, "a.txt"),
        ("write_file", {"path": " ", "content": "c"}, None),
        ("write_file", {"path": 3}, None),
        ("read_file", {"path": "a.txt"}, None),
        ("bash", {"command": "echo > a.txt"}, None),
    ],
)
def test_only_editing_tools_name_a_file_to_read(
    tool: str, fields: dict[str, object], path: str | None
) -> None:
    assert edit_path(tool, fields) == path  # type: ignore[arg-type]


async def test_an_existing_text_file_is_read_whole(workspace: Path) -> None:
    (workspace / "notes.txt").write_bytes("héllo\r\nwörld\n".encode())
    before = await read_before(str(workspace), "notes.txt")
    assert before == FileBefore(str(workspace / "notes.txt"), "héllo\r\nwörld\n")
    assert not before.absent


async def test_a_missing_file_is_recorded_as_absent(workspace: Path) -> None:
    for path in ("new.txt", "no/such/dir/new.txt"):
        before = await read_before(str(workspace), path)
        assert before == FileBefore(str(workspace / path))
        assert before.absent


async def test_a_file_under_a_file_counts_as_absent(workspace: Path) -> None:
    (workspace / "plain").write_text("x")
    assert (await read_before(str(workspace), "plain/child.txt")).absent


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/hostname", "link/secret.txt", "alias"])
async def test_nothing_outside_the_workspace_is_read(workspace: Path, path: str) -> None:
    outside = workspace.parent / "secret.txt"
    outside.write_text("do not show")
    (workspace / "link").symlink_to(workspace.parent, target_is_directory=True)
    (workspace / "alias").symlink_to(outside)
    before = await read_before(str(workspace), path)
    assert (before.text, before.note) == (None, OUTSIDE)


async def test_a_file_over_the_limit_is_not_shown(workspace: Path) -> None:
    (workspace / "big.txt").write_bytes(b"a" * (FILE_TEXT_LIMIT_BYTES + 1))
    (workspace / "fits.txt").write_bytes(b"a" * FILE_TEXT_LIMIT_BYTES)
    big = await read_before(str(workspace), "big.txt")
    assert big.text is None
    assert big.note is not None
    assert f"more than {FILE_TEXT_LIMIT_BYTES} bytes" in big.note
    fits = await read_before(str(workspace), "fits.txt")
    assert fits.text is not None
    assert len(fits.text) == FILE_TEXT_LIMIT_BYTES


@pytest.mark.parametrize("data", [b"\xff\xfe\x00a", b"text\x00more", b"\xc3"])
async def test_a_file_that_is_not_utf8_text_is_not_shown(workspace: Path, data: bytes) -> None:
    (workspace / "blob.bin").write_bytes(data)
    before = await read_before(str(workspace), "blob.bin")
    assert before.text is None
    assert (
        before.note == "[The file did not hold UTF-8 text before the change, so no diff is shown.]"
    )


async def test_a_directory_or_a_fifo_is_not_read_and_does_not_hang(workspace: Path) -> None:
    (workspace / "dir").mkdir()
    os.mkfifo(workspace / "pipe")
    with anyio.fail_after(5):
        for path in ("dir", "pipe"):
            before = await read_before(str(workspace), path)
            assert before.text is None
            assert before.note == (
                "[muse-acp could not read the file before the change (it is not a regular "
                "file), so no diff is shown.]"
            ), path


async def test_an_unreadable_file_says_why(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = workspace / "locked.txt"
    secret.write_text("x")
    opened = os.open

    def denied(path: str, flags: int, *args: int) -> int:
        # A permission check cannot be relied on (tests may run as root), so the refusal the
        # operating system gives a user who may not read the file is played here.
        if str(path).endswith("locked.txt"):
            raise PermissionError(13, "Permission denied", str(path))
        return opened(path, flags, *args)

    monkeypatch.setattr(os, "open", denied)
    before = await read_before(str(workspace), "locked.txt")
    assert before.note is not None
    assert "Permission denied" in before.note


async def test_a_read_that_takes_too_long_gives_up(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "slow.txt").write_text("x")
    stuck = threading.Event()

    def slow(path: str, cwd: str) -> FileBefore:
        stuck.wait(5)
        return FileBefore(path, "late")

    monkeypatch.setattr(file_changes, "_read", slow)
    monkeypatch.setattr(file_changes, "READ_BUDGET", 0.1)
    try:
        with anyio.fail_after(5):
            before = await read_before(str(workspace), "slow.txt")
    finally:
        stuck.set()
    assert before == FileBefore(
        str(workspace / "slow.txt"),
        note="[Reading the file before the change took too long, so no diff is shown.]",
    )


class _Keeper:
    def __init__(self, cwd: str, path: str | None) -> None:
        self.cwd: str | None = cwd
        self.path = path
        self.kept: list[tuple[str, FileBefore]] = []

    def wants_before(self, call_id: str, tool: str, args: str) -> str | None:
        return self.path

    def keep_before(self, call_id: str, before: FileBefore) -> None:
        self.kept.append((call_id, before))


async def test_capture_reads_only_what_the_keeper_asks_for(workspace: Path) -> None:
    (workspace / "a.txt").write_text("old")
    asked = _Keeper(str(workspace), "a.txt")
    await capture_before(asked, "call-1", "write_file", "{}")
    assert asked.kept == [("call-1", FileBefore(str(workspace / "a.txt"), "old"))]
    not_asked = _Keeper(str(workspace), None)
    await capture_before(not_asked, "call-1", "write_file", "{}")
    assert not_asked.kept == []
