"""The ``muse-acp`` command line as a person meets it: version, bad input, terminals, launches."""

from __future__ import annotations

import os
import pty
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from muse_acp import __version__
from muse_acp.host.binary import HostUnavailable, installation_dirs, probe, resolve_binary
from muse_acp.serving import TERMINAL_HINT
from muse_acp.sim.launcher import write_launcher

WAIT = 60.0
INITIALIZE = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
BIN = Path(sys.executable).parent


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without Muse settings, with scratch homes and no ``muse`` on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MUSE_", "META_"))}
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    env.update(
        PATH=str(empty),
        XDG_DATA_HOME=str(tmp_path / "data"),
        MUSE_SIM_HOME=str(tmp_path / "sim-home"),
    )
    env.update(extra)
    return env


def muse_acp(
    env: dict[str, str], *args: str, command: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(command or [sys.executable, "-m", "muse_acp"]), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


def sim_wrapper(directory: Path, version: str) -> Path:
    return write_launcher(directory / f"muse-{version}", version=version)


def test_version_names_the_adapter_and_the_muse_executable(tmp_path: Path) -> None:
    wrapper = sim_wrapper(tmp_path, "1.1.1")
    done = muse_acp(clean_env(tmp_path, MUSE_ACP_MUSE_BIN=str(wrapper)), "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"muse-acp {__version__}",
        f"Muse Code: muse 1.1.1-R2514.1 (simulated by muse-sim), {wrapper}",
    ]


def test_version_without_any_muse_still_succeeds(tmp_path: Path) -> None:
    done = muse_acp(clean_env(tmp_path), "--version")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"muse-acp {__version__}"
    assert lines[1].startswith("Muse Code: no executable found")


def test_version_of_a_muse_that_cannot_start_still_succeeds(tmp_path: Path) -> None:
    broken = tmp_path / "muse"
    broken.write_text("#!/nowhere/interpreter\n")
    broken.chmod(0o755)
    done = muse_acp(clean_env(tmp_path, MUSE_ACP_MUSE_BIN=str(broken)), "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("Muse Code: it could not be started")


@pytest.mark.parametrize("where", ["before", "after"])
def test_an_unknown_log_level_is_refused_wherever_it_is_given(tmp_path: Path, where: str) -> None:
    args = ["--log-level", "nonsense", "serve"]
    done = muse_acp(clean_env(tmp_path), *(args if where == "before" else args[2:] + args[:2]))
    assert done.returncode == 2
    assert "--log-level" in done.stderr
    assert "must be one of debug, info, warning, error, got 'nonsense'" in done.stderr


def test_an_unknown_log_level_in_the_environment_is_refused_by_serve(tmp_path: Path) -> None:
    done = muse_acp(clean_env(tmp_path, MUSE_ACP_LOG="nonsense"), "serve")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "muse-acp: MUSE_ACP_LOG must be one of debug, info, warning, error, got 'nonsense'"
    )
    assert done.stdout == ""


@pytest.mark.parametrize("where", ["before", "after"])
def test_an_unknown_backend_is_refused_wherever_it_is_given(tmp_path: Path, where: str) -> None:
    args = ["--backend", "sdk", "serve"]
    done = muse_acp(clean_env(tmp_path), *(args if where == "before" else args[2:] + args[:2]))
    assert done.returncode == 2
    assert "--backend must be auto, msp or exec" in done.stderr
    assert "got 'sdk'" in done.stderr
    assert done.stdout == ""


def test_an_unknown_backend_in_the_environment_is_refused_by_serve(tmp_path: Path) -> None:
    done = muse_acp(clean_env(tmp_path, MUSE_ACP_BACKEND="sdk"), "serve")
    assert done.returncode == 2
    assert done.stderr.startswith("muse-acp: MUSE_ACP_BACKEND must be auto, msp or exec (msp: ")
    assert done.stdout == ""


def test_the_backend_option_reaches_doctor(tmp_path: Path) -> None:
    wrapper = sim_wrapper(tmp_path, "1.2.1")
    done = muse_acp(clean_env(tmp_path), "--backend", "exec", "doctor", "--muse", str(wrapper))
    assert done.returncode == 0, done.stdout
    assert "exec: exec was chosen with --backend or MUSE_ACP_BACKEND" in done.stdout


def test_an_unknown_option_exits_2(tmp_path: Path) -> None:
    done = muse_acp(clean_env(tmp_path), "--no-such-option")
    assert done.returncode == 2
    assert "--no-such-option" in done.stderr
    assert done.stdout == ""


def test_options_before_the_command_reach_the_command(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "muse"
    done = muse_acp(clean_env(tmp_path), "--muse", str(missing), "doctor")
    assert done.returncode == 1
    assert "(looked for it through --muse)" in done.stdout
    assert str(missing) in done.stdout


def test_a_bare_launch_on_a_terminal_hints_on_stderr_and_still_serves(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    try:
        with subprocess.Popen(
            [sys.executable, "-m", "muse_acp"],
            env=clean_env(tmp_path),
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as process:
            os.close(follower)
            follower = -1
            try:
                assert process.stderr is not None
                assert process.stdout is not None
                assert process.stderr.readline().decode() == TERMINAL_HINT + "\n"
                # Still serving: an ACP request typed on the terminal is answered on stdout.
                os.write(leader, INITIALIZE + b"\n")
                ready, _, _ = select.select([process.stdout], [], [], WAIT)
                assert ready, "no answer to initialize"
                answer = process.stdout.readline()
                assert b'"id":1' in answer
                assert b'"protocolVersion":1' in answer
                os.write(leader, b"\x04")  # end of input, as Ctrl-D on a terminal
                assert process.wait(WAIT) == 0
            finally:
                if process.poll() is None:
                    process.kill()
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert "\n" not in TERMINAL_HINT
    assert "muse-acp demo" in TERMINAL_HINT


def test_a_launch_without_a_terminal_prints_no_hint(tmp_path: Path) -> None:
    done = muse_acp(clean_env(tmp_path), "serve")
    assert done.returncode == 0
    assert TERMINAL_HINT not in done.stderr


def test_companion_commands_are_found_beside_the_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    sim = bin_dir / "muse-sim"
    sim.write_text("#!/bin/sh\n")
    sim.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))

    assert str(bin_dir) == installation_dirs()[0]
    assert resolve_binary("muse-sim") == str(sim)
    with pytest.raises(HostUnavailable, match="no Muse executable found"):
        resolve_binary(None)
    muse = bin_dir / "muse"
    muse.write_text("#!/bin/sh\n")
    muse.chmod(0o755)
    assert resolve_binary(None) == str(muse)


def test_path_comes_before_the_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("on-path", "venv"):
        (tmp_path / folder).mkdir()
        script = tmp_path / folder / "muse-sim"
        script.write_text("#!/bin/sh\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "on-path"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "python"))
    assert resolve_binary("muse-sim") == str(tmp_path / "on-path" / "muse-sim")


def test_an_absolute_launch_finds_muse_sim_without_the_venv_on_path(tmp_path: Path) -> None:
    script = BIN / "muse-acp"
    assert script.is_file(), f"muse-acp is installed as a console script beside {sys.executable}"
    # A credential, so the doctor's sign-in check passes as well.
    env = clean_env(tmp_path, MUSE_ACP_MUSE_BIN="muse-sim", META_API_KEY="sk-placeholder")
    assert str(BIN) not in env["PATH"].split(os.pathsep)
    started = time.monotonic()
    done = muse_acp(env, "doctor", command=[str(script)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{BIN / 'muse-sim'}  (through MUSE_ACP_MUSE_BIN)" in done.stdout
    assert time.monotonic() - started < WAIT


def test_the_version_and_serve_probes_run_side_by_side(tmp_path: Path) -> None:
    # Each probe notes when it starts, then waits until the other one has started too (bounded),
    # so they can only both finish at once if muse-acp runs them side by side.
    log = tmp_path / "probes.log"
    fake = tmp_path / "muse"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "start $1" >> {shlex.quote(str(log))}\n'
        "for _ in $(seq 50); do\n"
        f'  [ "$(grep -c start {shlex.quote(str(log))})" -ge 2 ] && break\n'
        "  sleep 0.1\n"
        "done\n"
        f'[ "$(grep -c start {shlex.quote(str(log))})" -ge 2 ] || exit 3\n'
        'if [ "$1" = --version ]; then echo "muse 1.2.1"; fi\n'
        "exit 0\n"
    )
    fake.chmod(0o755)
    binary = anyio.run(probe, str(fake))
    assert (binary.version, binary.serves) == ("1.2.1", True)


def test_an_unknown_event_loop_in_the_environment_is_refused_by_serve(tmp_path: Path) -> None:
    done = muse_acp(clean_env(tmp_path, MUSE_ACP_EVENT_LOOP="trio"), "serve")
    assert done.returncode == 2
    assert done.stderr.startswith("muse-acp: MUSE_ACP_EVENT_LOOP must be auto (uvloop where ")
    assert "got 'trio'" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(("setting", "loop"), [("", "uvloop"), ("asyncio", "asyncio")])
def test_serve_runs_on_uvloop_unless_asked_for_asyncio(
    tmp_path: Path, setting: str, loop: str
) -> None:
    if loop == "uvloop":
        pytest.importorskip("uvloop", reason="uvloop is a dependency only where it is built")
    done = subprocess.run(
        [sys.executable, "-m", "muse_acp", "--log-level", "debug", "serve"],
        env=clean_env(tmp_path, MUSE_ACP_EVENT_LOOP=setting),
        input=INITIALIZE + b"\n",
        capture_output=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"serving on the {loop} event loop" in done.stderr.decode()
    assert done.stdout.startswith(b'{"jsonrpc":"2.0","id":1,"result":')


def test_what_editors_launch_is_served_without_loading_the_command_line_parser() -> None:
    # `muse-acp` and `muse-acp serve` (no options) skip typer, a good part of a cold start.
    script = (
        "import sys\n"
        "import muse_acp.cli, muse_acp.agent.server\n"
        "assert 'typer' not in sys.modules and 'click' not in sys.modules, 'parser loaded'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is tuned on Linux")
def test_serve_keeps_large_buffers_for_reuse(tmp_path: Path) -> None:
    done = muse_acp(clean_env(tmp_path), "--log-level", "debug", "serve")
    assert done.returncode == 0, done.stderr
    assert "heap: large buffers are kept for reuse" in done.stderr
