"""What a muse-acp that ended left of its exec runs is swept at the next start: the run's process
group is stopped only while its leader is still the recorded process, and the folder goes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import anyio
import pytest

from muse_acp.agent.hosting import exec_runs
from muse_acp.agent.hosting.exec_runs import RECORD_FILE, exec_run, runs_root, start_time, sweep
from muse_acp.agent.hosting.private_files import run_dir
from muse_acp.rpc import INTERNAL_ERROR, RpcError

WAIT = 30.0
"""Seconds any single wait of a test may take before it counts as a hang."""


def _ended_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process leading its own group, as a ``muse exec`` run does; always reaped."""
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def _run_folder(data_dir: Path, owner: int, record: Mapping[str, object] | None) -> Path:
    folder = runs_root(data_dir) / f"{owner}-0123abcd"
    folder.mkdir(parents=True)
    (folder / "image-01.png").write_bytes(b"image")
    if record is not None:
        (folder / RECORD_FILE).write_text(json.dumps(record))
    return folder


def test_a_run_still_going_for_an_ended_agent_is_stopped_and_removed(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    record = {"pid": sleeper.pid, "startTime": start_time(sleeper.pid)}
    assert record["startTime"] is not None
    folder = _run_folder(tmp_path, _ended_pid(), record)
    assert sweep(tmp_path) == 1
    assert not folder.exists()
    assert sleeper.wait(timeout=30) == -9


def test_a_process_that_took_the_runs_id_is_left_alone(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    started = start_time(sleeper.pid)
    assert started is not None
    folder = _run_folder(tmp_path, _ended_pid(), {"pid": sleeper.pid, "startTime": started - 1})
    assert sweep(tmp_path) == 1
    assert not folder.exists()
    assert sleeper.poll() is None, "another process's group was signalled"


_ORPHAN = """
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
sys.stdout.write(f"{os.getpid()}\\n")
sys.stdout.flush()
signal.sigwait({signal.SIGTERM})
sys.stdout.write("alive\\n")
"""
"""A group member that says its id once it holds SIGTERM, then ``alive`` when one comes; a
SIGKILL sent before it wins, so it then ends saying nothing. The signal is blocked and waited
for, so one sent at any moment after the id is said stays pending until taken: a Python handler
with ``signal.pause()`` loses a signal landing just before the pause, and the member then waits
for good. Only the member writes before ``alive``, so its id is the first line, whatever the
order the two processes run in."""


def test_a_group_whose_leader_is_gone_is_left_alone(tmp_path: Path) -> None:
    # An unrelated daemon's group: its leader started a member and exited, and the leader's id
    # is the one a crashed muse-acp recorded for its run (ids are reused).
    spawn = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {_ORPHAN!r}])"
    leader = subprocess.Popen(
        [sys.executable, "-c", spawn], start_new_session=True, stdout=subprocess.PIPE, bufsize=0
    )
    try:
        assert leader.stdout is not None
        member = int(leader.stdout.readline())  # said once it holds SIGTERM
        leader.wait(timeout=WAIT)
        assert start_time(leader.pid) is None
        folder = _run_folder(tmp_path, _ended_pid(), {"pid": leader.pid, "startTime": 123})
        assert sweep(tmp_path) == 1
        assert not folder.exists()
        os.kill(member, signal.SIGTERM)
        said, _ = leader.communicate(timeout=WAIT)
        assert said == b"alive\n", "a group whose leader was gone was killed"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(leader.pid, signal.SIGKILL)
        leader.wait(timeout=WAIT)


def test_runs_of_live_agents_and_other_entries_are_kept(tmp_path: Path) -> None:
    mine = _run_folder(tmp_path, os.getpid(), None)
    unrecorded = _run_folder(tmp_path, _ended_pid(), None)
    other = runs_root(tmp_path) / "notes"
    other.mkdir()
    assert sweep(tmp_path) == 1
    assert sorted(p.name for p in runs_root(tmp_path).iterdir()) == sorted([mine.name, "notes"])
    assert not unrecorded.exists()
    assert sweep(tmp_path / "missing") == 0


@pytest.mark.anyio
async def test_a_folder_that_cannot_be_made_fails_before_anything_runs(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.write_text("a file where the data directory should be")
    with pytest.raises(RpcError) as failed:
        async with exec_run(data_dir, []):
            raise AssertionError("the run must not start")
    assert failed.value.code == INTERNAL_ERROR
    assert "could not prepare the private folder of this exec run" in failed.value.message
    assert isinstance(failed.value.data, dict)
    failure = failed.value.data["failure"]
    assert isinstance(failure, dict)
    assert (failure["kind"], failure["source"]) == ("execRunUnprepared", "adapter")


@pytest.mark.anyio
async def test_a_folder_whose_file_system_does_not_answer_fails_in_time_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()

    def hung_run_dir(data_dir: Path, name: str) -> Path:
        release.wait(WAIT)  # a hung mount; bounded, so nothing hangs for good
        return run_dir(data_dir, name)

    monkeypatch.setattr(exec_runs, "run_dir", hung_run_dir)
    monkeypatch.setattr(exec_runs, "IO_BUDGET", 0.5)
    try:
        with anyio.fail_after(WAIT), pytest.raises(RpcError) as failed:
            async with exec_run(tmp_path / "data", []):
                raise AssertionError("the run must not start")
    finally:
        release.set()
    assert "its file system did not answer within 0.5s" in failed.value.message
    assert isinstance(failed.value.data, dict)
    failure = failed.value.data["failure"]
    assert isinstance(failure, dict)
    assert (failure["kind"], failure["source"]) == ("execRunUnprepared", "adapter")
