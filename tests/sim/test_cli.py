"""The ``muse-sim`` command line outside ``serve``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from muse_acp.sim.cli import main

from .harness import WAIT
from .runs import sim_env


def run(home: Path, *args: str, version: str = "1.2.1") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "muse_acp.sim", *args],
        env=sim_env(home, version, None),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


@pytest.mark.parametrize(
    ("version", "banner"),
    [
        ("1.1.1", "muse 1.1.1-R2514.1 (simulated by muse-sim)"),
        ("1.2.1", "muse 1.2.1-R2847.1 (simulated by muse-sim)"),
    ],
)
def test_version_names_the_simulated_build(tmp_path: Path, version: str, banner: str) -> None:
    done = run(tmp_path, "--version", version=version)
    assert (done.returncode, done.stdout) == (0, banner + "\n")


def test_an_unsupported_host_version_is_a_usage_error(tmp_path: Path) -> None:
    done = run(tmp_path, "--version", version="1.0.3")
    assert done.returncode == 2
    assert "MUSE_SIM_VERSION" in done.stderr
    assert done.stdout == ""


def test_serve_help_lists_the_safety_flags(tmp_path: Path) -> None:
    done = run(tmp_path, "serve", "--help")
    assert done.returncode == 0
    for flag in (
        "--disable-write",
        "--disable-shell",
        "--disable-sandbox",
        "--sandbox-network",
        "--no-session-log",
    ):
        assert flag in done.stdout


def test_skills_list_prints_a_small_catalog(tmp_path: Path) -> None:
    done = run(tmp_path, "skills", "list", "--json", "--workspace", str(tmp_path))
    assert done.returncode == 0
    skills = json.loads(done.stdout)["skills"]
    assert len(skills) == 3
    assert all(list(skill) == ["id", "description", "scope", "activation"] for skill in skills)
    assert [skill["activation"] for skill in skills].count("off") == 1
    missing = run(tmp_path, "skills", "list", "--json", "--workspace", str(tmp_path / "nope"))
    assert missing.returncode != 0


def test_login_and_logout_manage_a_credential_file(tmp_path: Path) -> None:
    assert run(tmp_path, "login").returncode == 0
    assert (tmp_path / "credentials.json").is_file()
    assert run(tmp_path, "logout").returncode == 0
    assert not (tmp_path / "credentials.json").exists()
    assert run(tmp_path, "logout").returncode == 0


def test_bad_arguments_and_fault_lists_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MUSE_SIM_FAULTS", "explode:now")
    monkeypatch.setenv("MUSE_SIM_HOME", str(tmp_path))
    assert main(["serve"]) == 2
    assert main(["serve", "--sandbox-network", "everywhere"]) == 2
    assert main(["frobnicate"]) == 2
    assert main([]) == 2


def test_the_console_script_is_installed() -> None:
    script = shutil.which("muse-sim", path=str(Path(sys.executable).parent))
    assert script is not None
    done = subprocess.run(
        [script, "--version"], capture_output=True, text=True, timeout=WAIT, check=False
    )
    assert done.returncode == 0
    assert done.stdout.startswith("muse ")


PROBE_PROGRAM = """
import contextlib, io, json, sys
from muse_acp.sim.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    statuses = [main(argv) for argv in (["--version"], ["skills", "list", "--json"])]
    with contextlib.suppress(SystemExit):
        statuses.append(main(["serve", "--help"]))
print(json.dumps({"statuses": statuses, "modules": sorted(sys.modules)}))
"""


def test_a_clients_probes_load_the_command_line_alone(tmp_path: Path) -> None:
    """A client runs ``--version``, ``serve --help`` and ``skills list`` before its sessions, many
    times over: they answer without the wire models, pydantic, ``dataclasses`` (and the
    ``inspect`` it loads) or ``pathlib``. Run without site packages (``-S``), so that nothing but
    the command line can have loaded a module."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-S", "-c", PROBE_PROGRAM],
        env={
            **sim_env(tmp_path, "1.2.1", None),
            "PYTHONPATH": f"{root / 'runtime'}:{root / 'generated'}",
        },
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["statuses"] == [0, 0, 0]
    loaded = set(report["modules"])
    heavy = {"pydantic", "muse_acp_wire._base", "dataclasses", "inspect", "pathlib", "anyio"}
    assert not loaded & heavy
