"""The Muse probes started before the agent has loaded are the ones the agent uses.

``muse-acp serve`` starts ``muse --version`` and ``muse serve --help`` as soon as it knows the
executable, so they run while the rest of the agent loads; the first ``probe`` collects those
processes rather than starting its own, and any never collected are killed and reaped.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.host import binary

HOLD = 10.0
"""Seconds a held spawn waits for its release at most."""

FAKE_MUSE = """#!/bin/sh
echo "$$ $*" >> "{log}"
case "$1" in
  --version) echo "muse 1.3.0 (R3401.1)";;
  serve) {serve_help};;
esac
"""


def _fake_muse(tmp_path: Path, serve_help: str = "echo '--disable-shell --disable-write'") -> Path:
    path = tmp_path / "muse"
    path.write_text(FAKE_MUSE.format(log=tmp_path / "calls.log", serve_help=serve_help))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture(autouse=True)
def _fresh_probe_state() -> None:
    binary._cache.clear()
    binary.discard_early_probes()


def test_a_probe_collects_the_early_processes_instead_of_starting_its_own(tmp_path: Path) -> None:
    path = str(_fake_muse(tmp_path))
    binary.start_probe(path)
    found = anyio.run(binary.probe, path)
    assert found.version == "1.3.0"
    assert found.serves
    assert found.serve_flags == {"--disable-shell", "--disable-write"}
    assert sorted(call.split(" ", 1)[1] for call in _calls(tmp_path)) == [
        "--version",
        "serve --help",
    ]


def test_early_probes_report_exactly_what_late_ones_do(tmp_path: Path) -> None:
    path = str(_fake_muse(tmp_path, serve_help="echo 'no such command' >&2; exit 2"))
    late = anyio.run(binary.probe, path)
    binary._cache.clear()
    binary.start_probe(path)
    early = anyio.run(binary.probe, path)
    assert early == late
    assert not early.serves


def test_starting_the_probes_does_not_wait_for_them_to_be_spawned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spawning a probe waits for the child's exec; the agent goes on loading meanwhile. Here
    # spawning is held until start_probe has returned (or HOLD has passed, had it waited).
    path = str(_fake_muse(tmp_path))
    released = threading.Event()
    spawned: list[list[str]] = []
    real = subprocess.Popen

    def held(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        released.wait(HOLD)
        spawned.append(args[1:])
        return real(args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", held)
    binary.start_probe(path)
    assert spawned == []
    released.set()
    assert anyio.run(binary.probe, path).version == "1.3.0"
    assert sorted(spawned) == [["--version"], ["serve", "--help"]]


def test_early_probes_never_collected_are_killed_and_reaped(tmp_path: Path) -> None:
    path = str(_fake_muse(tmp_path, serve_help="exec sleep 600"))
    binary.start_probe(path)
    _, spawned = binary._early[path]
    binary.discard_early_probes()
    assert binary._early == {}
    started = list(spawned.values())
    assert len(started) == 2
    for process in started:
        assert process.returncode is not None
        with pytest.raises(ProcessLookupError):
            os.kill(process.pid, 0)
