"""The state directory: where it is, event logs, leases and metadata."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from muse_acp.sim.options.settings import resolve_home
from muse_acp.sim.state.fold import Fold
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.store import SessionMeta, Store


def test_the_state_directory_follows_the_environment(tmp_path: Path) -> None:
    assert resolve_home({"MUSE_SIM_HOME": str(tmp_path / "h")}) == tmp_path / "h"
    assert resolve_home({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "muse-sim"
    assert resolve_home({}) == Path.home() / ".local" / "share" / "muse-sim"


def test_a_lease_is_exclusive_until_released(tmp_path: Path) -> None:
    store = Store(tmp_path)
    meta = SessionMeta(new_uuid7(), "t", "t", "/p", "meta", "m", "promptUnmatched")
    lease = store.create(meta)
    assert lease is not None
    assert store.acquire(meta.session_id) is None
    lease.release()
    again = store.acquire(meta.session_id)
    assert again is not None
    again.release()
    assert store.read_meta(meta.session_id) == meta
    assert [m.session_id for m in store.all_metas()] == [meta.session_id]


def test_an_unfinished_last_line_is_ignored_then_cut_off(tmp_path: Path) -> None:
    store = Store(tmp_path)
    meta = SessionMeta(new_uuid7(), "t", "t", None, None, None, "promptUnmatched")
    lease = store.create(meta)
    assert lease is not None
    log = store.log(meta.session_id)
    log.path.write_bytes(b'{"method":"a","params":{}}\n{"method":"b","par')
    assert log.lines() == [b'{"method":"a","params":{}}']
    log.open_for_append()
    log.append(b'{"method":"c","params":{}}')
    log.close()
    assert Fold.from_lines(log.lines()).head == 2
    assert log.path.read_bytes().count(b"\n") == 2
    lease.release()


def test_ids_that_are_not_uuids_never_become_paths(tmp_path: Path) -> None:
    store = Store(tmp_path)
    assert not store.exists("../../etc")
    assert store.read_meta("../x") is None
    assert store.read_output_info(new_uuid7(), "../../y") is None


def test_listing_again_reads_only_the_metas_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other_process = Store(tmp_path), Store(tmp_path)
    metas = [
        SessionMeta(new_uuid7(), "t", "t", "/p", None, None, "promptUnmatched") for _ in range(5)
    ]
    for meta in metas:
        lease = store.create(meta)
        assert lease is not None
        lease.release()
    reads: list[str] = []
    read_meta = Store.read_meta

    def counted(self: Store, session_id: str) -> SessionMeta | None:
        reads.append(session_id)
        return read_meta(self, session_id)

    monkeypatch.setattr(Store, "read_meta", counted)
    assert sorted(m.session_id for m in store.all_metas()) == sorted(m.session_id for m in metas)
    assert len(reads) == 5
    reads.clear()
    renamed = replace(metas[2], title="renamed elsewhere")
    other_process.write_meta(renamed)
    listed = {m.session_id: m for m in store.all_metas()}
    assert reads == [renamed.session_id]
    assert listed[renamed.session_id].title == "renamed elsewhere"
    assert len(listed) == 5
