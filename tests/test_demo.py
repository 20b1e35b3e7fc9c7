"""``muse-acp demo`` end to end: the agent as a child process, ``muse-sim`` as its host."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from muse_acp import __version__
from muse_acp.demo import SIM_PROMPTS, run_demo
from muse_acp.sim.launcher import write_launcher


@pytest.fixture
def scratch_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the demo's temporary home is created, so its removal can be checked."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_the_demo_shows_all_four_exchanges_and_succeeds(
    scratch_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run_demo(None)
    out = capsys.readouterr().out

    assert status == 0, out
    assert re.search(r"^  host    Muse 1\.2\.1 \(.*muse-sim, the simulator bundled", out, re.M)
    assert f"connected to muse-acp {__version__} over ACP v1" in out
    parts = [out.index(f"\n{number}. ") for number in range(1, 5)]
    assert parts == sorted(parts)
    plain, tool, permission, plan = (
        out[start:end] for start, end in zip(parts, [*parts[1:], len(out)], strict=True)
    )
    assert plain.count(SIM_PROMPTS[0]) == 2
    assert "[execute]" in tool
    assert "completed" in tool
    assert "\n  note    [" in tool
    assert "20,000 bytes" in tool
    assert "options: Allow once" in permission
    assert "chose   Allow once" in permission
    assert "ls -la" in permission
    assert "[x] " in plan
    assert "[~] " in plan
    assert "[ ] " in plan
    assert "\033[" not in out
    assert list(scratch_root.iterdir()) == []


def test_a_missing_muse_executable_fails_with_a_clear_reason(
    scratch_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run_demo(str(scratch_root / "no-such-muse"))
    out = capsys.readouterr().out
    assert status == 1
    assert "The demo could not start" in out
    assert "no-such-muse" in out
    assert list(scratch_root.iterdir()) == []


def test_the_demo_names_the_version_its_muse_host_reports(
    scratch_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older = write_launcher(tmp_path / "older-muse", version="1.1.1")
    status = run_demo(str(older))
    out = capsys.readouterr().out
    assert status == 0, out
    assert f"  host    Muse 1.1.1 ({older})\n" in out
    assert f"Muse Code {__version__}" not in out
