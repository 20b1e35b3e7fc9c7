"""The state directory: where it is, event logs, leases and metadata."""

from __future__ import annotations

from pathlib import Path

from muse_acp.sim.fold import Fold
from muse_acp.sim.ids import new_uuid7
from muse_acp.sim.settings import resolve_home
from muse_acp.sim.store import SessionMeta, Store


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
