"""``muse-acp doctor`` against ``muse-sim`` (both versions) and against missing executables."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from muse_acp.doctor import run_doctor
from muse_acp.host.binary import SERVE_FLAGS
from muse_acp.host.versions import VERIFIED_HOSTS


def sim_wrapper(directory: Path, version: str) -> Path:
    wrapper = directory / f"muse-{version}"
    wrapper.write_text(
        f"#!/bin/sh\nMUSE_SIM_VERSION={version} "
        f'exec {shlex.quote(sys.executable)} -m muse_acp.sim "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


@pytest.fixture(autouse=True)
def no_configured_muse(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing from the developer's own setup: no configured executable, no ``muse`` on PATH."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    for name in ("MUSE_ACP_MUSE_BIN", "MUSE_SIM_VERSION", "MUSE_ACP_STARTUP_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)


def features(out: str) -> dict[str, str]:
    found = re.findall(r"^ {2}(?:features)? +(\w+) +(on|off) ", out, flags=re.MULTILINE)
    return dict(found)


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1"])
def test_muse_sim_is_ready_with_the_features_verified_for_its_version(
    version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wrapper = sim_wrapper(tmp_path, version)
    monkeypatch.setenv("MUSE_ACP_MUSE_BIN", str(wrapper))

    status = run_doctor(None)
    out = capsys.readouterr().out

    assert status == 0, out
    assert f"{wrapper}  (through MUSE_ACP_MUSE_BIN)" in out
    assert f"muse {version}-" in out
    assert re.search(rf"^  version +{re.escape(version)}$", out, flags=re.MULTILINE)
    assert re.search(r"^  serve +supported$", out, flags=re.MULTILINE)
    assert all(flag in out for flag in SERVE_FLAGS)
    assert features(out) == {
        feature: "on" if version in verified else "off"
        for feature, verified in VERIFIED_HOSTS.items()
    }
    assert "verdict       ready" in out


def test_the_two_simulated_versions_differ_in_their_features(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = []
    for version in ("1.1.1", "1.2.1"):
        assert run_doctor(str(sim_wrapper(tmp_path, version))) == 0
        out = capsys.readouterr().out
        assert "(through --muse)" in out
        seen.append(features(out))
    assert seen[0] != seen[1]
    assert "on" not in seen[0].values()


def test_no_muse_anywhere_fails_and_says_what_to_install_or_set(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = run_doctor(None)
    out = capsys.readouterr().out
    assert status == 1
    assert "not found (looked for it through PATH)" in out
    assert "NOT READY" in out
    assert "install Muse Code" in out
    assert "MUSE_ACP_MUSE_BIN" in out


def test_a_missing_explicit_executable_fails_and_names_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run_doctor(str(tmp_path / "nowhere" / "muse"))
    out = capsys.readouterr().out
    assert status == 1
    assert "(looked for it through --muse)" in out
    assert "fix --muse or MUSE_ACP_MUSE_BIN" in out


def test_an_executable_without_serve_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old-muse"
    old.write_text(
        '#!/bin/sh\nif [ "$1" = --version ]; then echo "muse 0.9.0"; exit 0; fi\nexit 2\n'
    )
    old.chmod(0o755)
    status = run_doctor(str(old))
    out = capsys.readouterr().out
    assert status == 1
    assert re.search(r"^  version +0\.9\.0$", out, flags=re.MULTILINE)
    assert "does not support `serve`" in out


def test_an_unusable_setting_fails_before_looking_for_muse(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MUSE_ACP_STARTUP_TIMEOUT", "soon")
    status = run_doctor(None)
    out = capsys.readouterr().out
    assert status == 1
    assert "MUSE_ACP_STARTUP_TIMEOUT" in out
    assert "\n  executable" not in out
