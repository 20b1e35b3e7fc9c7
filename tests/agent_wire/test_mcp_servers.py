"""The editor's MCP servers reach Muse through muse-sim, on every version it plays: in the
session's own config where the host takes them so, else in a private settings overlay."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema
from pydantic import TypeAdapter

from tests.robust.faults_harness import wait_until

from .harness import WAIT, World, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
SECRET = "mcp-secret-7f3a91"
HTTP_WORKS = {
    "1.1.1": True,
    "1.2.1": True,
    "1.3.0": True,
    "1.4.2": True,
    "1.4.4": True,
    "1.4.13": True,
}
"""Whether http servers reach each version: natively from 1.3.0 (Muse's own declarations), by
overlay on 1.1.1 and 1.2.1; a Muse between those that takes neither is refused, naming the Muse
it needs (tests/agent/test_mcp_servers.py)."""
_SERVERS: TypeAdapter[list[Any]] = TypeAdapter(
    list[schema.HttpMcpServer | schema.SseMcpServer | schema.McpServerStdio]
)
_USER_SETTINGS = {
    "schema_version": 1,
    "model": "users-own-model",
    "mcpServers": {"mine": {"transport": "stdio", "command": sys.executable, "mode": "optional"}},
}


def _wire(entries: list[dict[str, Any]]) -> list[Any]:
    """The entries as the SDK's own server models."""
    return _SERVERS.validate_python(entries)


def _servers(*, broken: bool = False, http: bool = False) -> list[Any]:
    servers: list[dict[str, Any]] = [
        {
            "name": "sim-broken" if broken else "files",
            "command": sys.executable,
            "args": ["-V"],
            "env": [{"name": "TOKEN", "value": SECRET}],
        }
    ]
    if http:
        servers.append(
            {
                "type": "http",
                "name": "web",
                "url": "https://mcp.example/x",
                "headers": [{"name": "Authorization", "value": f"Bearer {SECRET}"}],
            }
        )
    return _wire(servers)


def _world(tmp_path: Path, version: str) -> World:
    """A world whose user has Muse settings of their own (with a server) and a credential."""
    world = make_world(tmp_path, version=version)
    muse = tmp_path / "user-config" / "muse"
    muse.mkdir(parents=True)
    (muse / "settings.json").write_text(json.dumps(_USER_SETTINGS))
    (muse / "auth.json").write_text('{"schema_version": 1}')
    world.extra_env["XDG_CONFIG_HOME"] = str(muse.parent)
    world.extra_env["MUSE_SIM_SETTINGS_CAPTURE"] = str(tmp_path / "settings-capture.jsonl")
    return world


def _configs(world: World, method: str) -> list[Any]:
    return [f["params"].get("config") for f in world.host_requests(method)]


def _settings_reads(world: World) -> list[dict[str, Any]]:
    """What each host read from the settings file it was pointed at."""
    path = Path(world.extra_env["MUSE_SIM_SETTINGS_CAPTURE"])
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line]


def _overlay_reads(world: World) -> list[dict[str, Any]]:
    user_home = world.extra_env["XDG_CONFIG_HOME"]
    return [read for read in _settings_reads(world) if read["configHome"] != user_home]


def _received(world: World, method: str) -> dict[str, Any]:
    """The MCP servers the host got with its last ``method``: in the request's config when
    they went natively, else from the overlay its process read them from."""
    configs = [config for config in _configs(world, method) if config]
    if configs:
        servers: dict[str, Any] = configs[-1]["mcpServers"]
        return servers
    reads = _overlay_reads(world)
    return reads[-1]["mcpServers"] if reads else {}


def _assert_no_secret_left(world: World) -> None:
    assert SECRET not in world.stderr_text()
    for path in world.data_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace")
    overlays = world.data_dir / "run" / "settings-overlays"
    assert not overlays.exists() or not any(overlays.iterdir()), "an overlay outlived its host"
    user_settings = Path(world.extra_env["XDG_CONFIG_HOME"]) / "muse" / "settings.json"
    assert json.loads(user_settings.read_text()) == _USER_SETTINGS


@pytest.mark.parametrize("version", VERSIONS)
async def test_servers_reach_the_host(tmp_path: Path, version: str) -> None:
    world = _world(tmp_path, version)
    async with running_agent(world) as agent:
        session = (
            await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=_servers())
        ).session_id
        await agent.prompt(session, "hello")
    received = _received(world, "session/start")
    assert received["files"]["env"] == {"TOKEN": SECRET}
    assert received["files"]["mode"] == "required"
    if version == "1.1.1":
        # No per-session servers on this Muse: an overlay only the user can read carries them,
        # alongside the user's own settings and servers.
        assert _configs(world, "session/start") == [None]
        (read,) = _overlay_reads(world)
        assert (read["configHomeMode"], read["settingsMode"]) == ("0o700", "0o600")
        assert set(read["mcpServers"]) == {"mine", "files"}
    else:
        assert _overlay_reads(world) == []
    initialize = [
        f
        for f in world.host_requests("initialize")
        if "sessionMcp" in str(f["params"].get("capabilities"))
    ]
    assert bool(initialize) is (version != "1.1.1")
    _assert_no_secret_left(world)


@pytest.mark.parametrize("version", VERSIONS)
async def test_initialize_advertises_what_works(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        response = await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    caps = response.agent_capabilities
    assert caps is not None
    assert caps.mcp_capabilities is not None
    assert caps.mcp_capabilities.http is HTTP_WORKS[version]
    assert caps.mcp_capabilities.sse is False


@pytest.mark.parametrize("version", VERSIONS)
async def test_sse_is_refused_naming_the_entry(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    sse = {"type": "sse", "name": "events", "url": "https://e.example", "headers": []}
    async with running_agent(world) as agent:
        with pytest.raises(acp.RequestError) as refused:
            await agent.conn.new_session(
                cwd=str(world.workspace), mcp_servers=[*_servers(), *_wire([sse])]
            )
    assert refused.value.code == -32602
    assert "mcpServers[1] ('events') is an SSE server" in str(refused.value)


@pytest.mark.parametrize("version", [v for v in VERSIONS if HTTP_WORKS[v]])
async def test_http_passes_through(tmp_path: Path, version: str) -> None:
    world = _world(tmp_path, version)
    async with running_agent(world) as agent:
        session = (
            await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=_servers(http=True))
        ).session_id
        await agent.prompt(session, "hello")
    received = _received(world, "session/start")
    assert received["web"]["transport"] == "streamableHttp"
    assert received["web"]["headers"] == {"Authorization": f"Bearer {SECRET}"}
    assert set(received) >= {"files", "web"}
    # 1.2.1 takes stdio natively but not http: the session's servers all go one way.
    assert bool(_overlay_reads(world)) is (version in ("1.1.1", "1.2.1"))
    _assert_no_secret_left(world)


@pytest.mark.parametrize("version", VERSIONS)
async def test_resume_after_restart_passes_its_servers(tmp_path: Path, version: str) -> None:
    world = _world(tmp_path, version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        await agent.prompt(session, "hello")
    async with running_agent(world) as agent:
        await agent.conn.resume_session(
            session_id=session, cwd=str(world.workspace), mcp_servers=_servers()
        )
        await agent.prompt(session, "again")
    assert _received(world, "session/resume")["files"]["command"] == sys.executable
    _assert_no_secret_left(world)


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_server_that_fails_to_start_fails_the_prompt(tmp_path: Path, version: str) -> None:
    world = _world(tmp_path, version)
    async with running_agent(world) as agent:
        session = (
            await agent.conn.new_session(
                cwd=str(world.workspace), mcp_servers=_servers(broken=True)
            )
        ).session_id
        with pytest.raises(acp.RequestError) as failed:
            await agent.prompt(session, "hello")
    assert "could not start the MCP server 'sim-broken'" in str(failed.value)
    assert SECRET not in str(failed.value)
    _assert_no_secret_left(world)


async def _removed(path: Path) -> None:
    """Wait (bounded) until the agent removed ``path``: it sweeps in the background, with
    nothing on the wire to say when it is done."""
    await wait_until(lambda: not path.exists(), WAIT, lambda: f"{path} is still there")


def _ended_pid() -> int:
    """The id of a process that has ended (as a crashed muse-acp has)."""
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(ended.stdout)


@pytest.mark.parametrize("version", VERSIONS)
async def test_overlays_a_crashed_agent_left_are_removed_at_start(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    stale = world.data_dir / "run" / "settings-overlays" / f"{_ended_pid()}-0123abcd"
    (stale / "muse").mkdir(parents=True)
    (stale / "muse" / "settings.json").write_text(json.dumps({"secret": SECRET}))
    async with running_agent(world) as agent:
        await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await _removed(stale)
