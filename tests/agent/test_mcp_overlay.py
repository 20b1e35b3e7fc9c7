"""The private settings overlay that carries MCP servers to a Muse without per-session servers."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.agent.hosting.hosts import SetupFailure
from muse_acp.agent.hosting.mcp_overlay import (
    UserSettings,
    overlay_root,
    read_user_settings,
    settings_overlay,
    sweep,
)
from muse_acp.agent.mcp.mcp_servers import McpServerSpec, check_servers
from muse_acp.rpc import INTERNAL_ERROR
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


def _overlay(
    root: Path, environ: dict[str, str]
) -> contextlib.AbstractContextManager[Mapping[str, str]]:
    """The overlay for ``_servers()`` from the settings the environment's user has."""
    user: UserSettings = anyio.run(read_user_settings, environ)
    return settings_overlay(root, _servers(), user, environ)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_overlay_is_private_merged_and_removed(tmp_path: Path) -> None:
    user = {
        "schema_version": 1,
        "model": "mine",
        "mcp_servers": {"old": {"transport": "stdio", "command": "a"}},
        "mcpServers": {"files": {"transport": "stdio", "command": "replaced"}},
    }
    home = _user_home(tmp_path, user)
    before = (home / "muse" / "settings.json").read_bytes()
    root = overlay_root(tmp_path / "data")
    with _overlay(root, {"XDG_CONFIG_HOME": str(home), "X": "1"}) as env:
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
    assert not overlay.exists()
    assert (home / "muse" / "settings.json").read_bytes() == before
    assert (home / "muse" / "auth.json").exists()


def test_no_user_settings_makes_a_fresh_file(tmp_path: Path) -> None:
    home = _user_home(tmp_path, None)
    root = overlay_root(tmp_path / "data")
    with _overlay(root, {"XDG_CONFIG_HOME": str(home)}) as env:
        written = json.loads((Path(env["XDG_CONFIG_HOME"]) / "muse" / "settings.json").read_text())
    assert written["schema_version"] == 1
    assert set(written["mcpServers"]) == {"files", "web"}
    assert not (home / "muse" / "settings.json").exists()


@pytest.mark.parametrize(
    "settings", ["{not json", "[1]", {"mcpServers": [1]}, {"mcp_servers": "x"}]
)
def test_unusable_user_settings_fail_clearly_and_leave_nothing(
    tmp_path: Path, settings: Any
) -> None:
    home = _user_home(tmp_path, settings)
    root = overlay_root(tmp_path / "data")
    with (
        pytest.raises(SetupFailure) as failed,
        _overlay(root, {"XDG_CONFIG_HOME": str(home)}),
    ):
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
user = anyio.run(read_user_settings, env)
with settings_overlay(overlay_root(data), _servers(), user, env) as overlay:
    modes = [Path(p).stat().st_mode & 0o777 for p in (data, data / "run", overlay_root(data))]
print(json.dumps(modes))
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
