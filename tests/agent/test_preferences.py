"""The adapter's own per-session preference files: round trips, safety on disk, and damage."""

from __future__ import annotations

import json
import os
import stat
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from muse_acp.agent.options import preference_files, preferences
from muse_acp.agent.options.preferences import (
    MAX_FILE_BYTES,
    SCHEMA_VERSION,
    PreferenceStore,
    SessionPreferences,
)
from muse_acp.rpc.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError

SESSION = "0190b5c2-7a1e-7c3d-9f00-123456789abc"
WAIT: Final = 10.0
MOMENT = datetime(2026, 3, 4, 5, 6, 7, 890000, tzinfo=UTC)


def _store(tmp_path: Path) -> PreferenceStore:
    return PreferenceStore(tmp_path / "data")


def _write_raw(store: PreferenceStore, content: bytes) -> Path:
    path = store.path_for(SESSION)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def test_a_session_without_a_file_has_no_preferences(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.load(SESSION) == SessionPreferences()
    assert not store.directory.exists()


def test_a_saved_title_is_loaded_back_by_a_fresh_store(tmp_path: Path) -> None:
    saved = _store(tmp_path).save_user_title(SESSION, "Release plan 中文", now=MOMENT)
    assert saved == SessionPreferences("Release plan 中文", "2026-03-04T05:06:07.890Z")
    assert _store(tmp_path).load(SESSION) == saved


def test_the_file_holds_the_documented_document(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.save_user_title(SESSION, "Plan", now=MOMENT)
    document = json.loads((tmp_path / "data" / "sessions" / f"{SESSION}.json").read_text())
    assert document == {
        "schemaVersion": 1,
        "userTitle": {"text": "Plan", "updatedAt": "2026-03-04T05:06:07.890Z"},
    }


def test_the_timestamp_is_written_in_utc(tmp_path: Path) -> None:
    local = datetime(2026, 3, 4, 7, 6, 7, 890000, tzinfo=timezone(timedelta(hours=2)))
    saved = _store(tmp_path).save_user_title(SESSION, "Plan", now=local)
    assert saved.title_updated_at == "2026-03-04T05:06:07.890Z"


def test_a_second_title_replaces_the_first(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.save_user_title(SESSION, "First", now=MOMENT)
    store.save_user_title(SESSION, "Second", now=MOMENT + timedelta(seconds=1))
    assert store.load(SESSION) == SessionPreferences("Second", "2026-03-04T05:06:08.890Z")


def test_writes_leave_no_temporary_files_behind(tmp_path: Path) -> None:
    store = _store(tmp_path)
    for index in range(3):
        store.save_user_title(SESSION, f"Title {index}")
    names = sorted(p.name for p in store.directory.iterdir())
    assert names == [f"{SESSION}.json", f"{SESSION}.lock"]  # the lock file is kept


def test_the_directories_and_file_are_private_to_the_owner(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.save_user_title(SESSION, "Private")
    assert stat.S_IMODE(store.data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.path_for(SESSION).stat().st_mode) == 0o600


def test_a_rewrite_keeps_the_file_private(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.save_user_title(SESSION, "One")
    store.save_user_title(SESSION, "Two")
    assert stat.S_IMODE(store.path_for(SESSION).stat().st_mode) == 0o600


def test_members_this_version_does_not_know_survive_a_rewrite(tmp_path: Path) -> None:
    store = _store(tmp_path)
    extra: dict[str, Any] = {"reasoningEffort": "high", "future": {"nested": [1, 2]}}
    _write_raw(store, json.dumps({"schemaVersion": 1, **extra}).encode())
    store.save_user_title(SESSION, "Kept", now=MOMENT)
    document = json.loads(store.path_for(SESSION).read_text())
    assert document == {
        "schemaVersion": 1,
        **extra,
        "userTitle": {"text": "Kept", "updatedAt": "2026-03-04T05:06:07.890Z"},
    }


def test_a_file_without_a_title_has_no_user_title(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _write_raw(store, b'{"schemaVersion": 1, "other": true}')
    assert store.load(SESSION) == SessionPreferences()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{not json", "not valid UTF-8 JSON"),
        (b"\xff\xfe{}", "not valid UTF-8 JSON"),
        (b"", "not valid UTF-8 JSON"),
        (b"[1, 2]", "does not hold a JSON object"),
        (b"{}", "schemaVersion is null"),
        (b'{"schemaVersion": 2}', "schemaVersion is 2"),
        (b'{"schemaVersion": "1"}', 'schemaVersion is "1"'),
        (b'{"schemaVersion": true}', "schemaVersion is true"),
        (b'{"schemaVersion": 1, "userTitle": "bare"}', "userTitle is not an object"),
        (b'{"schemaVersion": 1, "userTitle": {"text": 5}}', "userTitle.text"),
        (b'{"schemaVersion": 1, "userTitle": {"text": ""}}', "userTitle.text"),
        (b'{"schemaVersion": 1, "userTitle": {"text": "a\\nb"}}', "userTitle.text"),
        (b'{"schemaVersion": 1, "userTitle": {"text": " pad "}}', "userTitle.text"),
        (b'{"schemaVersion": 1, "userTitle": {"text": "t", "updatedAt": 1}}', "updatedAt"),
    ],
)
def test_an_unusable_file_is_reported_with_its_path_and_the_fix(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    store = _store(tmp_path)
    path = _write_raw(store, content)
    with pytest.raises(RpcError) as caught:
        store.load(SESSION)
    assert caught.value.code == INTERNAL_ERROR
    assert str(path) in caught.value.message
    assert reason in caught.value.message
    assert "remove it" in caught.value.message
    assert caught.value.data == {"path": str(path)}


def test_an_unusable_file_is_not_overwritten_by_a_new_title(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = _write_raw(store, b'{"schemaVersion": 7, "mine": "precious"}')
    with pytest.raises(RpcError) as caught:
        store.save_user_title(SESSION, "New")
    assert caught.value.code == INTERNAL_ERROR
    assert path.read_bytes() == b'{"schemaVersion": 7, "mine": "precious"}'
    assert sorted(p.name for p in store.directory.iterdir()) == [path.name, f"{SESSION}.lock"]


def test_an_oversized_file_is_reported_rather_than_read(tmp_path: Path) -> None:
    store = _store(tmp_path)
    padding = "x" * MAX_FILE_BYTES
    _write_raw(store, json.dumps({"schemaVersion": SCHEMA_VERSION, "pad": padding}).encode())
    with pytest.raises(RpcError) as caught:
        store.load(SESSION)
    assert caught.value.code == INTERNAL_ERROR
    assert "larger than" in caught.value.message


def test_a_path_that_cannot_be_read_is_reported(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.path_for(SESSION).mkdir(parents=True)
    with pytest.raises(RpcError) as caught:
        store.load(SESSION)
    assert caught.value.code == INTERNAL_ERROR
    assert "cannot be read" in caught.value.message


def test_a_failed_write_is_reported_and_leaves_nothing_behind(tmp_path: Path) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the data directory should be")
    store = PreferenceStore(blocker)
    with pytest.raises(RpcError) as caught:
        store.save_user_title(SESSION, "Nowhere")
    assert caught.value.code == INTERNAL_ERROR
    assert str(store.path_for(SESSION)) in caught.value.message
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


@pytest.mark.parametrize(
    "session_id",
    [
        "",
        ".",
        "..",
        "../escape",
        "a/b",
        "/etc/passwd",
        "a\\b",
        ".hidden",
        "-leading-dash",
        "nul\x00byte",
        "x" * 129,
        "line\nbreak",
    ],
)
def test_ids_that_are_not_plain_file_names_are_refused(tmp_path: Path, session_id: str) -> None:
    store = _store(tmp_path)
    with pytest.raises(RpcError) as loading:
        store.load(session_id)
    with pytest.raises(RpcError) as saving:
        store.save_user_title(session_id, "Escape")
    assert loading.value.code == saving.value.code == INVALID_PARAMS
    assert not (tmp_path / "data").exists()


def test_every_id_muse_can_mint_names_a_file_in_the_sessions_directory(tmp_path: Path) -> None:
    store = _store(tmp_path)
    for session_id in (SESSION, "a", "A_b-9", "x" * 128):
        assert store.path_for(session_id).parent == store.directory


# -- reading off the event loop: never a hang, never more than one session's problem --------

CORRUPT: Final = {
    "not json": b"{not json",
    "empty": b"",
    "array": b"[1, 2]",
    "wrong schema version": b'{"schemaVersion": 2}',
    "non-string title": b'{"schemaVersion": 1, "userTitle": {"text": 5}}',
    "multi-line title": b'{"schemaVersion": 1, "userTitle": {"text": "a\\nb"}}',
    "invalid utf-8": b'{"schemaVersion": 1, "userTitle": {"text": "\xff"}}',
    "two megabytes": b'{"schemaVersion": 1, "pad": "' + b"x" * (2 * 1024 * 1024) + b'"}',
    "deep nesting": b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "huge number": b'{"schemaVersion": 1, "n": ' + b"9" * 5000 + b"}",
}
SAYS: Final = {
    "not json": "not valid UTF-8 JSON",
    "empty": "not valid UTF-8 JSON",
    "array": "does not hold a JSON object",
    "wrong schema version": "schemaVersion is 2",
    "non-string title": "userTitle.text",
    "multi-line title": "userTitle.text",
    "invalid utf-8": "not valid UTF-8 JSON",
    "two megabytes": "larger than",
    "deep nesting": "nests deeper",
    "huge number": "integer longer",
}


@pytest.mark.anyio
@pytest.mark.parametrize("name", CORRUPT)
async def test_a_corrupt_file_is_its_sessions_problem_only(tmp_path: Path, name: str) -> None:
    store = _store(tmp_path)
    good = "0190b5c2-7a1e-7c3d-9f00-00000000000a"
    store.save_user_title(good, "Fine", now=MOMENT)
    path = _write_raw(store, CORRUPT[name])
    with anyio.fail_after(10):
        kept = await store.read_many([SESSION, good])
    problem = kept[SESSION].problem
    assert problem is not None
    assert SAYS[name] in problem
    assert str(path) in problem
    assert kept[SESSION].user_title is None
    assert kept[good] == SessionPreferences("Fine", "2026-03-04T05:06:07.890Z")
    assert path.read_bytes() == CORRUPT[name], "an unusable file is never rewritten"


@pytest.mark.anyio
async def test_a_fifo_at_the_path_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    store = _store(tmp_path)
    path = store.path_for(SESSION)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with anyio.fail_after(2):
        kept = await store.read(SESSION)
    assert kept.problem is not None
    assert "not a regular file" in kept.problem


@pytest.mark.anyio
async def test_a_file_system_that_never_answers_costs_one_bounded_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    released = threading.Event()
    monkeypatch.setattr(preferences, "IO_TIMEOUT", 0.2)
    # A worker that hangs as a dead network mount would (released at the end of the test).
    monkeypatch.setattr(store, "load", lambda _: released.wait(30) and SessionPreferences())
    try:
        with anyio.fail_after(5):
            kept = await store.read(SESSION)
    finally:
        released.set()
    assert kept.problem is not None
    assert "did not answer" in kept.problem


@pytest.mark.anyio
async def test_a_write_reported_as_failed_never_lands_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    released, finished = threading.Event(), threading.Event()
    real_fsync, real_write = os.fsync, preference_files.write_document

    def stalled_fsync(fd: int) -> None:  # a file system that stalls past the caller's patience
        released.wait(WAIT)
        real_fsync(fd)

    def write(*args: Any) -> None:
        try:
            real_write(*args)
        finally:
            finished.set()

    monkeypatch.setattr(preferences, "IO_TIMEOUT", 0.2)
    monkeypatch.setattr("muse_acp.agent.options.preferences.write_document", write)
    monkeypatch.setattr(os, "fsync", stalled_fsync)
    with anyio.fail_after(WAIT), pytest.raises(RpcError) as caught:
        await store.write_user_title(SESSION, "Given up on")
    assert not store.path_for(SESSION).exists()
    released.set()
    assert await anyio.to_thread.run_sync(finished.wait, WAIT), "the worker did not finish"
    assert not store.path_for(SESSION).exists(), "a write reported as failed landed later"
    assert list(store.directory.iterdir()) == [store.directory / f"{SESSION}.lock"]
    assert caught.value.code == INTERNAL_ERROR
    assert "nothing was saved" in caught.value.message
