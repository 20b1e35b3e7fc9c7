"""What muse-acp keeps of a deleted session: its preference file goes; and a tombstone an
earlier release wrote still hides its session; every failure said with its path."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from muse_acp.agent.options.preferences import PreferenceStore
from muse_acp.agent.sessions.tombstones import Tombstones
from muse_acp.rpc.errors import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError

pytestmark = pytest.mark.anyio

SESSION = "0190b5c2-7a1e-7c3d-9f00-123456789abc"
OTHER = "0190b5c2-7a1e-7c3d-9f00-00000000000a"


def _stores(tmp_path: Path) -> tuple[PreferenceStore, Tombstones]:
    preferences = PreferenceStore(tmp_path / "data")
    return preferences, Tombstones(preferences)


async def test_a_tombstone_an_earlier_release_wrote_still_hides_its_session(
    tmp_path: Path,
) -> None:
    _, tombstones = _stores(tmp_path)
    tombstones.directory.mkdir(parents=True)
    tombstones.path_for(SESSION).write_text('{"schemaVersion": 1, "deletedAt": "x"}\n')
    with anyio.fail_after(10):
        hidden = await tombstones.hidden([SESSION, OTHER, "unknown"])
        with pytest.raises(RpcError) as raised:
            await tombstones.refuse(SESSION)
        await tombstones.refuse(OTHER)
    assert hidden == {SESSION}
    assert raised.value.code == RESOURCE_NOT_FOUND
    assert "was deleted" in raised.value.message


async def test_forgetting_removes_the_preferences_and_leaves_no_tombstone(
    tmp_path: Path,
) -> None:
    preferences, tombstones = _stores(tmp_path)
    preferences.save_user_title(SESSION, "Mine")
    preferences.save_user_title(OTHER, "Kept")
    with anyio.fail_after(10):
        await tombstones.forget(SESSION)
        await tombstones.forget("0190b5c2-7a1e-7c3d-9f00-00000000000b")  # nothing stored
        hidden = await tombstones.hidden([SESSION, OTHER])
    assert hidden == frozenset()
    assert not preferences.path_for(SESSION).exists()
    assert preferences.load(OTHER).user_title == "Kept"
    assert not tombstones.directory.exists()


async def test_an_id_that_cannot_name_a_file_is_refused_and_creates_nothing(
    tmp_path: Path,
) -> None:
    _, tombstones = _stores(tmp_path)
    for bad in ("../escape", ".hidden", "a/b", ""):
        with pytest.raises(RpcError) as raised:
            await tombstones.forget(bad)
        assert raised.value.code == INVALID_PARAMS
    assert not (tmp_path / "data").exists()
    assert not (tmp_path / "escape.json").exists()


async def test_an_unreadable_record_is_an_error_not_a_deleted_session_shown_again(
    tmp_path: Path,
) -> None:
    _, tombstones = _stores(tmp_path)
    tombstones.directory.parent.mkdir(parents=True)
    tombstones.directory.write_text("not a directory")
    with anyio.fail_after(10), pytest.raises(RpcError) as raised:
        await tombstones.hidden([SESSION])
    assert raised.value.code == INTERNAL_ERROR
    assert str(tombstones.directory) in raised.value.message


async def test_a_preference_file_that_cannot_be_removed_is_named(tmp_path: Path) -> None:
    preferences, tombstones = _stores(tmp_path)
    preferences.path_for(SESSION).mkdir(parents=True)  # unlink refuses a directory
    with anyio.fail_after(10), pytest.raises(RpcError) as raised:
        await tombstones.forget(SESSION)
    assert raised.value.code == INTERNAL_ERROR
    assert str(preferences.path_for(SESSION)) in raised.value.message
    assert "remove that file yourself" in raised.value.message
