"""The MCP servers of Muse's settings file, as muse-sim reads and starts them on every version."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from muse_acp.ids import new_uuid7
from muse_acp.sim.cli import main
from muse_acp.sim.options.mcp_settings import SettingsError, capture_settings, read_mcp_settings

from .harness import sim_served

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
WORKING = {"transport": "stdio", "command": sys.executable, "env": {"TOKEN": "t"}}
HTTP = {"transport": "streamableHttp", "url": "https://mcp.example/x", "mode": "required"}


def _settings(tmp_path: Path, settings: Any) -> dict[str, str]:
    muse = tmp_path / "config" / "muse"
    muse.mkdir(parents=True, exist_ok=True)
    text = settings if isinstance(settings, str) else json.dumps(settings)
    (muse / "settings.json").write_text(text)
    return {"XDG_CONFIG_HOME": str(muse.parent)}


@pytest.mark.parametrize("version", VERSIONS)
async def test_settings_servers_start_with_each_session(tmp_path: Path, version: str) -> None:
    servers = {"files": WORKING, "web": HTTP}
    async with sim_served(tmp_path / "home", version, settings_mcp=servers) as peer:
        await peer.initialize()
        assert await peer.start()


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_settings_server_that_cannot_start_fails_the_session(
    tmp_path: Path, version: str
) -> None:
    servers = {"files": WORKING, "sim-broken": {**WORKING, "mode": "required"}}
    async with sim_served(tmp_path / "home", version, settings_mcp=servers) as peer:
        await peer.initialize()
        error = await peer.error(
            "session/start", {"commandId": new_uuid7(), "workspaceRoot": "/projects/demo"}
        )
    assert error["message"] == (
        'Required MCP server "sim-broken" failed during startup: could not be reached'
    )


async def test_an_optional_settings_server_that_cannot_start_is_skipped(tmp_path: Path) -> None:
    servers = {"sim-broken": {**WORKING, "mode": "optional"}}
    async with sim_served(tmp_path / "home", "1.1.1", settings_mcp=servers) as peer:
        await peer.initialize()
        assert await peer.start()


def test_reading_the_settings_file(tmp_path: Path) -> None:
    assert read_mcp_settings({}) == {}
    assert read_mcp_settings({"XDG_CONFIG_HOME": str(tmp_path / "none")}) == {}
    env = _settings(
        tmp_path,
        {"mcp_servers": {"a": WORKING, "b": WORKING}, "mcpServers": {"b": HTTP}},
    )
    assert read_mcp_settings(env) == {"a": WORKING, "b": HTTP}
    env["MUSE_SIM_SETTINGS_CAPTURE"] = str(tmp_path / "capture.jsonl")
    capture_settings(env, read_mcp_settings(env))
    (record,) = [json.loads(line) for line in (tmp_path / "capture.jsonl").read_text().splitlines()]
    assert record["settingsMode"] == oct(
        (tmp_path / "config/muse/settings.json").stat().st_mode & 0o777
    )
    assert set(record["mcpServers"]) == {"a", "b"}


@pytest.mark.parametrize("settings", ["{broken", "[]", {"mcpServers": []}])
def test_an_unreadable_settings_file_stops_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    env = _settings(tmp_path, settings)
    with pytest.raises(SettingsError):
        read_mcp_settings(env)
    monkeypatch.setenv("XDG_CONFIG_HOME", env["XDG_CONFIG_HOME"])
    monkeypatch.setenv("MUSE_SIM_HOME", str(tmp_path / "home"))
    assert main(["serve"]) == 2
