"""The private settings overlay that carries MCP servers to a Muse without per-session servers."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.agent.hosting import mcp_overlay
from muse_acp.agent.hosting.hosts import HostKeeper, SetupFailure
from muse_acp.agent.hosting.mcp_overlay import (
    UserSettings,
    overlay_root,
    read_user_settings,
    settings_overlay,
    sweep,
)
from muse_acp.agent.hosting.private_files import run_dir
from muse_acp.agent.hosting.starting import Hosting
from muse_acp.agent.mcp.mcp_servers import McpServerSpec, check_servers
from muse_acp.config import AdapterConfig
from muse_acp.rpc import INTERNAL_ERROR
from muse_acp.sim.launcher import write_launcher
from muse_acp_wire import acp

SECRET = "overlay-secret-51c2"


def _servers() -> tuple[McpServerSpec, ...]:
    request = acp.NewSessionRequest.model_validate(
        {
            "cwd": "/w",
            "mcpServers": [
                {
                    "name": "files",
                    "command": "/usr/bin/mcp",
                    "args": ["--x"],
                    "env": [{"name": "TOKEN", "value": SECRET}],
                },
                {
                    "type": "http",
                    "name": "web",
                    "url": "https://mcp.example/x",
                    "headers": [{"name": "Authorization", "value": f"Bearer {SECRET}"}],
                },
            ],
        }
    )
    return check_servers(request.mcp_servers)


def _user_home(tmp_path: Path, settings: Any) -> Path:
    home = tmp_path / "config"
    (home / "muse").mkdir(parents=True)
    (home / "git").mkdir()
    (home / "muse" / "auth.json").write_text('{"token": "kept"}')
    if settings is not None:
        text = settings if isinstance(settings, str) else json.dumps(settings)
        (home / "muse" / "settings.json").write_text(text)
    return home


@contextlib.asynccontextmanager
async def _overlay(root: Path, environ: dict[str, str]) -> AsyncIterator[Mapping[str, str]]:
    """The overlay for ``_servers()`` from the settings the environment's user has."""
    user: UserSettings = await read_user_settings(environ)
    async with settings_overlay(root, _servers(), user, environ) as env:
        yield env


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.anyio
async def test_the_overlay_is_private_merged_and_removed(tmp_path: Path) -> None:
    user = {
        "schema_version": 1,
        "model": "mine",
        "mcp_servers": {"old": {"transport": "stdio", "command": "a"}},
        "mcpServers": {"files": {"transport": "stdio", "command": "replaced"}},
    }
    home = _user_home(tmp_path, user)
    before = (home / "muse" / "settings.json").read_bytes()
    root = overlay_root(tmp_path / "data")
    async with _overlay(root, {"XDG_CONFIG_HOME": str(home), "X": "1"}) as env:
        overlay = Path(env["XDG_CONFIG_HOME"])
        assert env["X"] == "1"
        assert overlay.parent == root
        settings_file = overlay / "muse" / "settings.json"
        assert (_mode(overlay), _mode(overlay / "muse"), _mode(settings_file)) == (
            0o700,
            0o700,
            0o600,
        )
        written = json.loads(settings_file.read_text())
        assert written["model"] == "mine"
        assert set(written["mcpServers"]) == {"old", "files", "web"}
        assert "mcp_servers" not in written
        assert written["mcpServers"]["files"] == {
            "transport": "stdio",
            "command": "/usr/bin/mcp",
            "args": ["--x"],
            "env": {"TOKEN": SECRET},
            "mode": "required",
        }
        assert written["mcpServers"]["web"]["headers"] == {"Authorization": f"Bearer {SECRET}"}
        # The user's other files show through, read-only links to the originals.
        assert (overlay / "muse" / "auth.json").read_text() == '{"token": "kept"}'
        assert (overlay / "git").is_symlink()
    assert not await anyio.Path(overlay).exists()
    assert (home / "muse" / "settings.json").read_bytes() == before
    assert (home / "muse" / "auth.json").exists()


@pytest.mark.anyio
async def test_no_user_settings_makes_a_fresh_file(tmp_path: Path) -> None:
    home = _user_home(tmp_path, None)
    root = overlay_root(tmp_path / "data")
    async with _overlay(root, {"XDG_CONFIG_HOME": str(home)}) as env:
        written = json.loads((Path(env["XDG_CONFIG_HOME"]) / "muse" / "settings.json").read_text())
    assert written["schema_version"] == 1
    assert set(written["mcpServers"]) == {"files", "web"}
    assert not (home / "muse" / "settings.json").exists()


@pytest.mark.anyio
@pytest.mark.parametrize(
    "settings", ["{not json", "[1]", {"mcpServers": [1]}, {"mcp_servers": "x"}]
)
async def test_unusable_user_settings_fail_clearly_and_leave_nothing(
    tmp_path: Path, settings: Any
) -> None:
    home = _user_home(tmp_path, settings)
    root = overlay_root(tmp_path / "data")
    with pytest.raises(SetupFailure) as failed:
        async with _overlay(root, {"XDG_CONFIG_HOME": str(home)}):
            pass
    assert failed.value.code == INTERNAL_ERROR
    assert "settings.json" in failed.value.message
    assert "remove the MCP servers from the session" in failed.value.message
    assert SECRET not in failed.value.message
    assert isinstance(failed.value.data, dict)
    failure = failed.value.data["failure"]
    assert isinstance(failure, dict)
    assert (failure["kind"], failure["source"], failure["phase"]) == (
        "mcpOverlayFailed",
        "adapter",
        "starting",
    )
    assert not root.exists() or not any(root.iterdir())


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_sweep_removes_only_overlays_of_ended_processes(tmp_path: Path) -> None:
    root = overlay_root(tmp_path / "data")
    stale = root / f"{_dead_pid()}-abc" / "muse"
    stale.mkdir(parents=True)
    (stale / "settings.json").write_text(SECRET)
    mine = root / f"{os.getpid()}-def"
    mine.mkdir()
    other = root / "notes"
    other.mkdir()
    assert sweep(root) == 1
    assert sorted(p.name for p in root.iterdir()) == sorted([mine.name, "notes"])
    assert sweep(tmp_path / "missing") == 0


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_settings_path_that_is_no_regular_file_is_refused_without_waiting(
    tmp_path: Path, kind: str
) -> None:
    home = _user_home(tmp_path, None)
    settings = home / "muse" / "settings.json"
    if kind == "fifo":
        os.mkfifo(settings)  # opening it for a blocking read would wait for a writer forever
    else:
        settings.mkdir()

    async def read() -> None:
        with anyio.fail_after(5):
            await read_user_settings({"XDG_CONFIG_HOME": str(home)})

    with pytest.raises(SetupFailure) as failed:
        anyio.run(read)
    assert "is not a regular file" in failed.value.message
    assert "or remove it. Nothing was sent to the model;" in failed.value.message
    assert str(settings) in failed.value.message


_UMASK_RUN = """
import json, os, sys
from pathlib import Path
import anyio
from muse_acp.agent.hosting.mcp_overlay import overlay_root, read_user_settings, settings_overlay
from tests.agent.test_mcp_overlay import _servers
os.umask(0)
data, env = Path(sys.argv[1]), {"XDG_CONFIG_HOME": sys.argv[2]}
async def main() -> list[int]:
    user = await read_user_settings(env)
    async with settings_overlay(overlay_root(data), _servers(), user, env):
        return [Path(p).stat().st_mode & 0o777 for p in (data, data / "run", overlay_root(data))]
print(json.dumps(anyio.run(main)))
"""


def test_the_runtime_folders_are_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    home = _user_home(tmp_path, None)
    data = tmp_path / "fresh" / "data"
    done = subprocess.run(
        [sys.executable, "-c", _UMASK_RUN, str(data), str(home)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [0o700, 0o700, 0o700]


OVERLAY_VERSIONS = ("1.1.1", "1.2.1")
"""The Muse versions that get MCP servers through a settings overlay."""
WAIT = 30.0
"""Seconds any single wait of a test may take before it counts as a hang."""


@pytest.mark.anyio
@pytest.mark.parametrize("version", OVERLAY_VERSIONS)
async def test_a_data_dir_that_does_not_answer_fails_the_start_clearly_and_stalls_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    home = _user_home(tmp_path, None)
    environ = {"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(home)}
    muse = write_launcher(tmp_path / "muse", version=version, home=tmp_path / "sim")
    data = tmp_path / "data"
    hosting = Hosting(AdapterConfig(muse_bin=str(muse), data_dir=data), environ)
    # The run folder's file system stops answering (a hung network mount) until released;
    # bounded, so nothing hangs for good on the code before the fix either.
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()
    real_make = mcp_overlay._make

    def hung_run_dir(data_dir: Path, name: str) -> Path:
        entered.set()
        release.wait(WAIT)
        return run_dir(data_dir, name)

    def make(*args: Any) -> None:
        try:
            real_make(*args)
        finally:
            finished.set()

    monkeypatch.setattr(mcp_overlay, "run_dir", hung_run_dir)
    monkeypatch.setattr(mcp_overlay, "_make", make)
    monkeypatch.setattr(mcp_overlay, "SETTINGS_TIMEOUT", 1.0)
    user = await read_user_settings(environ)
    with_servers = HostKeeper("with servers", hosting, idle=60)
    with_servers.environment = partial(settings_overlay, overlay_root(data), _servers(), user)
    other = HostKeeper("other", hosting, idle=60)
    try:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tasks:
                hosting.attach(tasks)
                with pytest.raises(SetupFailure) as failed:
                    await with_servers.start(str(tmp_path))
                # Served while the overlay's file work still hangs: the loop never waited on it.
                host = await other.start(str(tmp_path))
                assert host.process.returncode is None
                assert entered.is_set()
                assert not finished.is_set(), "the file system answered too early"
                other.close()
                await other.wait_gone()
                tasks.cancel_scope.cancel()
    finally:
        release.set()
    assert failed.value.code == INTERNAL_ERROR
    assert "could not be written under" in failed.value.message
    assert "within 1s (its file system does not answer" in failed.value.message
    assert str(overlay_root(data)) in failed.value.message
    assert SECRET not in failed.value.message
    assert isinstance(failed.value.data, dict)
    failure = failed.value.data["failure"]
    assert isinstance(failure, dict)
    assert (failure["kind"], failure["source"]) == ("mcpOverlayFailed", "adapter")
    # The file system answers at last: the worker finishes the overlay nobody waits for any
    # more, and removes it (its secrets) itself.
    assert await anyio.to_thread.run_sync(finished.wait, WAIT)
    assert list(overlay_root(data).iterdir()) == []
