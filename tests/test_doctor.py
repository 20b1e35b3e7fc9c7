"""``muse-acp doctor`` against ``muse-sim`` (both versions), missing and unusable executables."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Final

import pytest

from muse_acp import __version__
from muse_acp.doctor import run_doctor
from muse_acp.host.binary import SERVE_FLAGS
from muse_acp.host.features import NEEDS
from muse_acp.sim.launcher import write_launcher
from muse_acp.sim.options.accounts import login


def sim_wrapper(directory: Path, version: str) -> Path:
    return write_launcher(directory / f"muse-{version}", version=version)


@pytest.fixture(autouse=True)
def no_configured_muse(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing from the developer's own setup: no configured executable, no ``muse`` on PATH."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("MUSE_SIM_HOME", str(tmp_path / "sim-home"))
    for name in (
        "MUSE_ACP_MUSE_BIN",
        "MUSE_ACP_BACKEND",
        "MUSE_SIM_VERSION",
        "MUSE_ACP_STARTUP_TIMEOUT",
        "MUSE_ACP_LOG",
        "META_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def signed_in(tmp_path: Path) -> None:
    """The simulated Muse has a credential, as after `muse login`."""
    login(tmp_path / "sim-home")


def features(out: str) -> dict[str, str]:
    found = re.findall(r"^ {2}(?:features)? +(\w+) +(on|off) ", out, flags=re.MULTILINE)
    return dict(found)


ON: Final[dict[str, frozenset[str]]] = {
    "1.1.1": frozenset({"mcpOverlay", "nativeApprovalPolicy", "turnForkBoundary"}),
    "1.2.1": frozenset({"mcpOverlay", "nativeApprovalPolicy", "turnForkBoundary", "storedOutput"}),
    "1.4.4": frozenset(
        {
            "nativeApprovalPolicy",
            "goals",
            "taskControl",
            "workflowChildren",
            "planUsage",
            "planSkill",
            "workspaceRoots",
            "questionEngaged",
            "subagentStop",
            "workflowPause",
        }
    ),
}
ON["1.4.13"] = ON["1.4.4"] | {
    "turnForkBoundary",
    "workflowResume",
}  # the 1.4.3-1.4.4 fork fault is fixed
"""The features each host gets: what the bundle it is read with declares, less known faults."""
BUNDLE_LINE: Final = {
    "1.1.1": "MSP 1.1.1 (its own) for Muse 1.1.1",
    "1.2.1": "MSP 1.2.1 (its own) for Muse 1.2.1",
    "1.4.4": "MSP 1.4.4 (its own) for Muse 1.4.4",
    "1.4.13": "MSP 1.4.13 (its own) for Muse 1.4.13",
}


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1", "1.4.4", "1.4.13"])
@pytest.mark.usefixtures("signed_in")
def test_muse_sim_is_ready_with_the_bundle_and_features_of_its_version(
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
        feature: "on" if feature in ON[version] else "off" for feature in NEEDS
    }
    assert re.search(rf"^  bindings +{re.escape(BUNDLE_LINE[version])}$", out, re.M), out
    assert re.search(rf"^  initialize +answered by muse {re.escape(version)} in ", out, re.M)
    assert re.search(rf"^  muse-acp +{re.escape(__version__)}  \(Python ", out, re.M)
    assert re.search(r"^  credential +a signed-in Muse account \(", out, re.M)
    assert "verdict       ready" in out


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13"])
def test_muse_sim_not_signed_in_is_not_ready_and_says_how_to_sign_it_in(
    version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # README's trial: `MUSE_ACP_MUSE_BIN=muse-sim muse-acp doctor` on a fresh machine. Like
    # Muse, the simulator starts signed out, and a session asks for sign-in first.
    assert run_doctor(str(sim_wrapper(tmp_path, version))) == 1
    out = capsys.readouterr().out
    assert re.search(r"^  credential +NONE: muse-sim, the simulator, is not signed in$", out, re.M)
    assert re.search(r"^  verdict +NOT READY: .*Run `muse-sim login` once", out, re.M), out


def test_a_muse_without_a_credential_is_not_ready_and_says_how_to_sign_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The simulator standing in for a real Muse: its handshake no longer names it.
    monkeypatch.setattr("muse_acp.doctor.findings.SIMULATOR_AGENT", "not-muse-sim/")
    wrapper = sim_wrapper(tmp_path, "1.2.1")
    assert run_doctor(str(wrapper)) == 1
    out = capsys.readouterr().out
    assert re.search(r"^  credential +NONE: ", out, re.M)
    assert f"Run `{wrapper} login` in a terminal, or export META_API_KEY" in out


def test_an_exported_key_is_the_credential_the_doctor_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("META_API_KEY", "sk-doctor-test-0123456789")
    assert run_doctor(str(sim_wrapper(tmp_path, "1.2.1"))) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  credential +.*META_API_KEY", out, re.M), out
    assert "sk-doctor-test" not in out


@pytest.mark.usefixtures("signed_in")
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
    assert (seen[0]["storedOutput"], seen[1]["storedOutput"]) == ("off", "on")
    assert seen[0]["mcpOverlay"] == seen[1]["mcpOverlay"] == "on"


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
    assert "supports neither `serve` nor `exec --json`" in out


def test_a_muse_without_serve_is_ready_through_the_exec_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_doctor(str(sim_wrapper(tmp_path, "0.2.1"))) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  serve +NOT supported", out, flags=re.MULTILINE)
    assert re.search(
        r"^  backend +exec: Muse 0\.2\.1 has no `serve` \(added in Muse 1\.1\.1\), so the "
        r"legacy `muse exec --json` is used$",
        out,
        flags=re.MULTILINE,
    )
    assert re.search(r"^  exec flags +--json, --image, --disable-write", out, flags=re.MULTILINE)
    assert re.search(r"^  initialize +not used: the exec backend speaks no MSP$", out, re.M)
    assert set(features(out).values()) == {"off"}
    assert "ready: muse-acp can serve ACP with this Muse executable through the legacy exec" in out


def test_the_backend_asked_for_is_reported_with_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wrapper = sim_wrapper(tmp_path, "1.2.1")
    assert run_doctor(str(wrapper), backend="exec", as_json=True) == 0
    sections = {s["name"]: s for s in json.loads(capsys.readouterr().out)["sections"]}
    assert sections["backend"]["facts"]["backend"] == "exec"
    assert sections["backend"]["facts"]["reason"] == (
        "exec was chosen with --backend or MUSE_ACP_BACKEND"
    )
    assert sections["features"]["facts"]["storedOutput"]["enabled"] is False

    monkeypatch.setenv("MUSE_ACP_BACKEND", "msp")
    assert run_doctor(str(sim_wrapper(tmp_path, "0.2.1"))) == 1
    out = capsys.readouterr().out
    assert re.search(r"^  backend +NOT usable \(msp was asked for\)$", out, flags=re.MULTILINE)
    assert "does not support `serve`" in out
    assert "MUSE_ACP_BACKEND=exec" in out


def test_an_unknown_backend_is_refused_and_says_what_is_accepted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MUSE_ACP_BACKEND", "sdk")
    assert run_doctor(None) == 1
    out = capsys.readouterr().out
    assert "MUSE_ACP_BACKEND must be auto, msp or exec" in out
    assert "got 'sdk'" in out
    assert "\n  executable" not in out


def test_an_unusable_setting_fails_before_looking_for_muse(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MUSE_ACP_STARTUP_TIMEOUT", "soon")
    status = run_doctor(None)
    out = capsys.readouterr().out
    assert status == 1
    assert "MUSE_ACP_STARTUP_TIMEOUT" in out
    assert "\n  executable" not in out


def test_an_executable_that_does_not_speak_msp_is_not_usable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = run_doctor("/bin/true")
    out = capsys.readouterr().out
    assert status == 1
    assert re.search(r"^  serve +supported$", out, flags=re.MULTILINE)
    assert re.search(
        r"^  initialize +NOT usable: it ended before answering MSP initialize \(exit code 0\)$",
        out,
        flags=re.MULTILINE,
    )
    assert "NOT READY: the Muse executable /bin/true is not usable: it ended before" in out
    assert "\nFeatures\n" not in out


def test_an_executable_that_never_answers_is_not_usable_within_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    silent = tmp_path / "silent-muse"
    python = shlex.quote(sys.executable)
    silent.write_text(
        f'#!/bin/sh\nif [ "$1" = serve ] && [ -z "$2" ]; then\n'
        f'  exec {python} -c "import time; time.sleep(60)"\nfi\n'
    )
    silent.chmod(0o755)
    monkeypatch.setenv("MUSE_ACP_STARTUP_TIMEOUT", "1")
    status = run_doctor(str(silent))
    out = capsys.readouterr().out
    assert status == 1
    assert "NOT usable: it did not answer MSP initialize within 1s" in out


@pytest.mark.parametrize("setting", ["auto", "asyncio"])
def test_the_event_loop_serve_would_run_on_is_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], setting: str
) -> None:
    monkeypatch.setenv("MUSE_ACP_EVENT_LOOP", setting)
    run_doctor(None, as_json=True)
    document = json.loads(capsys.readouterr().out)
    sections = {section["name"]: section for section in document["sections"]}
    installed = importlib.util.find_spec("uvloop") is not None
    expected = "uvloop" if setting == "auto" and installed else "asyncio"
    assert sections["muse_acp"]["facts"]["event_loop"] == expected


def test_an_unusable_log_level_is_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MUSE_ACP_LOG", "nonsense")
    assert run_doctor(None) == 1
    out = capsys.readouterr().out
    assert "MUSE_ACP_LOG must be one of debug, info, warning, error, got 'nonsense'" in out


@pytest.mark.usefixtures("signed_in")
def test_json_output_carries_the_same_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrapper = sim_wrapper(tmp_path, "1.2.1")
    assert run_doctor(str(wrapper), as_json=True) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["ready"] is True
    assert document["muse_acp"] == {"version": __version__}
    sections = {section["name"]: section for section in document["sections"]}
    assert list(sections) == [
        "muse_acp",
        "executable",
        "backend",
        "handshake",
        "features",
        "sign_in",
    ]
    assert all(section["ok"] for section in sections.values())
    assert sections["executable"]["facts"]["path"] == str(wrapper)
    assert sections["executable"]["facts"]["origin"] == "--muse"
    assert sections["backend"]["facts"]["backend"] == "msp"
    assert sections["handshake"]["facts"]["server_version"] == "1.2.1"
    assert sections["features"]["facts"]["storedOutput"]["enabled"] is True
    assert sections["sign_in"]["facts"] == {"ok": True, "state": "accountLogin"}


def test_json_output_of_an_unusable_executable(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_doctor("/bin/true", as_json=True) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["ready"] is False
    assert "not usable" in document["verdict"]
    handshake = document["sections"][-1]
    assert handshake["name"] == "handshake"
    assert handshake["ok"] is False
    assert handshake["facts"]["ok"] is False
