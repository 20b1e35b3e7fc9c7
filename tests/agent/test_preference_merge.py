"""Preference writes from several processes: each changes only its own members, under the
session's lock, and learns what the others stored."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from muse_acp.agent.options import preference_files
from muse_acp.agent.options.config_options import ModelChoice, SessionSettings
from muse_acp.agent.options.preferences import (
    IO_TIMEOUT,
    PreferenceStore,
    SettingsChange,
    StoredSettings,
)
from muse_acp.agent.options.remembered import stored_elsewhere, to_stored
from muse_acp.agent.options.safety import SafetyChoices
from muse_acp.agent.sessions.tombstones import Tombstones
from muse_acp.rpc.errors import INTERNAL_ERROR, RpcError

SESSION: Final = "0190b5c2-7a1e-7c3d-9f00-123456789abc"
DEFAULTS: Final = StoredSettings("default")


def _store(tmp_path: Path) -> PreferenceStore:
    return PreferenceStore(tmp_path / "data")


def _document(store: PreferenceStore) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(store.path_for(SESSION).read_text())
    return loaded


def _seed(store: PreferenceStore, document: dict[str, Any]) -> None:
    path = store.path_for(SESSION)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))


def test_a_stale_process_writes_only_the_setting_it_changed(tmp_path: Path) -> None:
    store = _store(tmp_path)
    other = {"modeId": "plan", "modelId": "m1", "providerId": "p1", "effort": "high"}
    _seed(
        store,
        {
            "schemaVersion": 1,
            "userTitle": {"text": "Theirs", "updatedAt": "2026-01-01T00:00:00.000Z"},
            "settings": {**other, "safety": {"shell": "disabled"}, "future": [1]},
            "elsewhere": True,
        },
    )
    # This process still believes the session is in Ask mode with no effort.
    change = SettingsChange.between(DEFAULTS, replace(DEFAULTS, effort="low"))
    written = store.save_settings(SESSION, change)
    document = _document(store)
    assert document["settings"] == {
        **other,
        "effort": "low",
        "safety": {"shell": "disabled"},
        "future": [1],
    }
    assert document["userTitle"]["text"] == "Theirs"
    assert document["elsewhere"] is True
    assert written.settings == StoredSettings("plan", "m1", "p1", "low", (("shell", "disabled"),))


def test_safety_options_are_merged_one_by_one(tmp_path: Path) -> None:
    store = _store(tmp_path)
    stored = {"modeId": "default", "safety": {"shell": "disabled", "sandbox": "enabled"}}
    _seed(store, {"schemaVersion": 1, "settings": stored})
    mine = replace(DEFAULTS, safety=(("shell", "disabled"),))
    # Choosing one option and going back to Muse's default for another touch only those two.
    after = replace(DEFAULTS, safety=(("workspaceWrite", "disabled"),))
    store.save_settings(SESSION, SettingsChange.between(mine, after))
    assert _document(store)["settings"]["safety"] == {
        "sandbox": "enabled",
        "workspaceWrite": "disabled",
    }


def test_a_model_and_its_provider_change_together(tmp_path: Path) -> None:
    before = StoredSettings("default", "m1", "p1")
    change = SettingsChange.between(before, StoredSettings("default", "m2", None))
    assert change.members == {"model"}
    merged = change.applied_to(StoredSettings("plan", "m1", "p1", "high"))
    assert merged == StoredSettings("plan", "m2", None, "high")


def test_the_first_settings_stored_are_the_writer_s_own(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.save_created(SESSION, "/work")
    mine = StoredSettings("readOnly", effort="max")
    written = store.save_settings(SESSION, SettingsChange.between(DEFAULTS, mine))
    assert written.settings == mine
    assert written.created_cwd == "/work"


def test_a_write_waits_for_another_process_s_rewrite_and_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    store.save_user_title(SESSION, "First")
    waiting = threading.Event()
    real_sleep = time.sleep

    def noticed(seconds: float) -> None:
        waiting.set()  # the writer found the lock held and waits for it
        real_sleep(seconds)

    monkeypatch.setattr("muse_acp.agent.options.preference_files.time.sleep", noticed)
    change = SettingsChange.between(DEFAULTS, replace(DEFAULTS, mode_id="plan"))
    results: list[Any] = []
    lock = os.open(store.directory / f"{SESSION}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process, in the middle of its rewrite
        writer = threading.Thread(
            target=lambda: results.append(store.save_settings(SESSION, change))
        )
        writer.start()
        assert waiting.wait(IO_TIMEOUT), "the write did not wait for the lock"
        store.path_for(SESSION).write_text(
            json.dumps({"schemaVersion": 1, "userTitle": {"text": "Renamed elsewhere"}})
        )
    finally:
        os.close(lock)  # releases it
    writer.join(IO_TIMEOUT)
    assert not writer.is_alive()
    [written] = results
    assert written.user_title == "Renamed elsewhere"
    assert _document(store)["userTitle"] == {"text": "Renamed elsewhere"}
    assert _document(store)["settings"]["modeId"] == "plan"


@pytest.mark.anyio
async def test_a_lock_held_too_long_fails_the_write_in_time_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert preference_files.LOCK_WAIT < IO_TIMEOUT, "a write given up on must not happen later"
    monkeypatch.setattr(preference_files, "LOCK_WAIT", 0.2)
    store = _store(tmp_path)
    store.save_user_title(SESSION, "Kept")
    before = store.path_for(SESSION).read_bytes()
    lock = os.open(store.directory / f"{SESSION}.lock", os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with anyio.fail_after(IO_TIMEOUT), pytest.raises(RpcError) as caught:
            await store.write_user_title(SESSION, "Lost")
    finally:
        os.close(lock)
    assert caught.value.code == INTERNAL_ERROR
    assert "another muse-acp process held its lock file" in caught.value.message
    assert str(store.path_for(SESSION)) in caught.value.message
    assert store.path_for(SESSION).read_bytes() == before


def test_a_fifo_at_the_lock_path_is_refused_not_waited_on(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.directory.mkdir(parents=True)
    os.mkfifo(store.directory / f"{SESSION}.lock")
    with pytest.raises(RpcError) as caught:
        store.save_user_title(SESSION, "Never")
    assert caught.value.code == INTERNAL_ERROR
    assert "not a regular file" in caught.value.message
    assert not store.path_for(SESSION).exists()


def test_the_lock_file_is_private(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.save_user_title(SESSION, "Private")
    assert (store.directory / f"{SESSION}.lock").stat().st_mode & 0o777 == 0o600


def test_without_fcntl_writes_still_change_only_their_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(preference_files, "fcntl", None)
    store = _store(tmp_path)
    store.save_user_title(SESSION, "Mine")
    store.save_settings(SESSION, SettingsChange.between(DEFAULTS, replace(DEFAULTS, effort="low")))
    assert store.load(SESSION).user_title == "Mine"
    assert not (store.directory / f"{SESSION}.lock").exists()


def test_concurrent_writers_of_different_members_lose_nothing(tmp_path: Path) -> None:
    store = _store(tmp_path)
    rounds = 40
    modes = ("plan", "readOnly")

    def rename() -> None:
        for index in range(rounds):
            store.save_user_title(SESSION, f"Title {index}")

    def switch_modes() -> None:
        mine = DEFAULTS  # this writer's own, possibly stale, copy
        for index in range(rounds):
            after = replace(mine, mode_id=modes[index % 2])
            mine = (
                store.save_settings(SESSION, SettingsChange.between(mine, after)).settings or mine
            )

    def set_efforts() -> None:
        mine = DEFAULTS
        for index in range(rounds):
            after = replace(mine, effort=("low", "high")[index % 2])
            mine = (
                store.save_settings(SESSION, SettingsChange.between(mine, after)).settings or mine
            )

    workers = [threading.Thread(target=work) for work in (rename, switch_modes, set_efforts)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    kept = store.load(SESSION)
    assert kept.user_title == f"Title {rounds - 1}"
    assert kept.settings is not None
    assert kept.settings.mode_id == modes[(rounds - 1) % 2]
    assert kept.settings.effort == "high"


def test_a_live_session_takes_only_what_others_stored() -> None:
    offer = frozenset({"shell", "sandbox"})
    current = SessionSettings(effort="high", safety=SafetyChoices((), offer))
    wrote = to_stored(current)
    stored = replace(
        wrote,
        mode_id="plan",
        model_id="m1",
        safety=(("sandbox", "disabled"), ("workspaceWrite", "disabled")),
    )
    # Meanwhile this process changed the effort again; that is not taken back.
    current = replace(current, effort="low")
    theirs = stored_elsewhere(current, wrote, stored, None)
    assert theirs.mode_id == "plan"
    assert theirs.model == ModelChoice("m1")
    assert theirs.effort == "low"
    # A restriction the installed Muse cannot apply is taken too, held rather than dropped.
    assert theirs.safety.values == (("sandbox", "disabled"), ("workspaceWrite", "disabled"))
    assert theirs.safety.held() == ["workspaceWrite"]
    assert theirs.safety.offer == offer
    assert stored_elsewhere(current, wrote, wrote, None) is current


@pytest.mark.anyio
async def test_deleting_a_session_removes_its_lock_file_too(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.save_user_title(SESSION, "Gone soon")
    await Tombstones(store).forget(SESSION)
    assert list(store.directory.iterdir()) == []


def test_a_write_that_waited_through_a_deletion_excludes_later_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    store.save_user_title(SESSION, "Deleted meanwhile")
    lock_path = store.directory / f"{SESSION}.lock"
    waiting = threading.Event()
    real_sleep = time.sleep

    def noticed(seconds: float) -> None:
        waiting.set()
        real_sleep(seconds)

    held_while_writing: list[bool] = []
    real_write = preference_files.write_document

    def probing(path: Path, document: dict[str, Any], claim: Any = None) -> None:
        # Another process arriving now must find the session locked.
        probe = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held_while_writing.append(False)
        except BlockingIOError:
            held_while_writing.append(True)
        finally:
            os.close(probe)
        real_write(path, document, claim)

    monkeypatch.setattr("muse_acp.agent.options.preference_files.time.sleep", noticed)
    monkeypatch.setattr("muse_acp.agent.options.preferences.write_document", probing)
    deleting = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(deleting, fcntl.LOCK_EX)  # a deletion under way in another process
        # Only a write that creates the session writes after its deletion (a new session).
        writer = threading.Thread(target=store.save_created, args=(SESSION, "/work"))
        writer.start()
        assert waiting.wait(IO_TIMEOUT), "the write did not wait for the lock"
        store.path_for(SESSION).unlink()
        lock_path.unlink()
    finally:
        os.close(deleting)
    writer.join(IO_TIMEOUT)
    assert not writer.is_alive()
    assert held_while_writing == [True]
    assert store.load(SESSION).user_title is None
    assert store.load(SESSION).created_cwd == "/work"


@pytest.mark.parametrize("kind", ["settings", "title"])
def test_a_write_that_waited_through_a_deletion_does_not_bring_the_file_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    store = _store(tmp_path)
    store.save_user_title(SESSION, "Deleted meanwhile")
    lock_path = store.directory / f"{SESSION}.lock"
    waiting = threading.Event()
    real_sleep = time.sleep

    def noticed(seconds: float) -> None:
        waiting.set()
        real_sleep(seconds)

    monkeypatch.setattr("muse_acp.agent.options.preference_files.time.sleep", noticed)
    change = SettingsChange.between(DEFAULTS, replace(DEFAULTS, mode_id="plan"))
    failures: list[RpcError] = []

    def write() -> None:
        try:
            if kind == "settings":
                store.save_settings(SESSION, change)
            else:
                store.save_user_title(SESSION, "Renamed too late")
        except RpcError as error:
            failures.append(error)

    deleting = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(deleting, fcntl.LOCK_EX)  # session/delete removes the files under the lock
        writer = threading.Thread(target=write)
        writer.start()
        assert waiting.wait(IO_TIMEOUT), "the write did not wait for the lock"
        store.path_for(SESSION).unlink()
        lock_path.unlink()
    finally:
        os.close(deleting)
    writer.join(IO_TIMEOUT)
    assert not writer.is_alive()
    [failure] = failures
    assert failure.code == INTERNAL_ERROR
    assert "the session was deleted meanwhile" in failure.message
    assert not store.path_for(SESSION).exists()
