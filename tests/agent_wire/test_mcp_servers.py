"""The editor's MCP servers reach Muse through muse-sim, on every version it plays."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp import schema
from pydantic import TypeAdapter

from .harness import make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2")
SECRET = "mcp-secret-7f3a91"
_SERVERS: TypeAdapter[list[Any]] = TypeAdapter(
    list[schema.HttpMcpServer | schema.SseMcpServer | schema.McpServerStdio]
)


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


def _configs(world: Any, method: str) -> list[Any]:
    return [f["params"].get("config") for f in world.host_requests(method)]


@pytest.mark.parametrize("version", VERSIONS)
async def test_servers_reach_session_start(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        if version == "1.1.1":
            with pytest.raises(acp.RequestError) as refused:
                await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=_servers())
            assert refused.value.code == -32602
            assert "Muse Code 1.2.1 or newer" in str(refused.value)
            return
        session = (
            await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=_servers())
        ).session_id
        await agent.prompt(session, "hello")
    (config,) = _configs(world, "session/start")
    assert config["mcpServers"]["files"]["env"] == {"TOKEN": SECRET}
    assert config["mcpServers"]["files"]["mode"] == "required"
    if version == "1.4.2":
        (initialize,) = [
            f
            for f in world.host_requests("initialize")
            if "sessionMcp" in str(f["params"].get("capabilities"))
        ]
        assert initialize
    assert SECRET not in world.stderr_text()
    for path in world.data_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace")


@pytest.mark.parametrize("version", VERSIONS)
async def test_initialize_advertises_what_works(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        response = await agent.conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    caps = response.agent_capabilities
    assert caps is not None
    assert caps.mcp_capabilities is not None
    assert caps.mcp_capabilities.http is (version == "1.4.2")
    assert caps.mcp_capabilities.sse is False


@pytest.mark.parametrize("version", ["1.2.1", "1.4.2"])
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


@pytest.mark.parametrize("version", ["1.2.1", "1.3.0"])
async def test_http_needs_a_newer_muse(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        with pytest.raises(acp.RequestError) as refused:
            await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=_servers(http=True))
    assert refused.value.code == -32602
    assert "Muse Code 1.4.2 or newer" in str(refused.value)
    assert SECRET not in str(refused.value)


async def test_http_passes_through_on_1_4_2(tmp_path: Path) -> None:
    world = make_world(tmp_path, version="1.4.2")
    async with running_agent(world) as agent:
        session = (
            await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=_servers(http=True))
        ).session_id
        await agent.prompt(session, "hello")
    (config,) = _configs(world, "session/start")
    assert config["mcpServers"]["web"]["transport"] == "streamableHttp"
    assert config["mcpServers"]["web"]["headers"] == {"Authorization": f"Bearer {SECRET}"}
    assert SECRET not in world.stderr_text()


@pytest.mark.parametrize("version", ["1.2.1", "1.4.2"])
async def test_resume_after_restart_passes_its_servers(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        await agent.prompt(session, "hello")
    async with running_agent(world) as agent:
        await agent.conn.resume_session(
            session_id=session, cwd=str(world.workspace), mcp_servers=_servers()
        )
        await agent.prompt(session, "again")
    configs = _configs(world, "session/resume")
    assert configs[-1]["mcpServers"]["files"]["command"] == sys.executable


@pytest.mark.parametrize("version", ["1.2.1", "1.4.2"])
async def test_a_server_that_fails_to_start_fails_the_prompt(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
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
