"""The editor's MCP server secrets stay out of errors, logs and ``/status``, on every version
muse-sim plays: a host that dies printing its MCP servers' settings (``exit:mcp``) is reported
without them, its stderr reaches the debug log without them, and ``/status`` shows none."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import acp
import pytest

from muse_acp.redact import REDACTED

from .harness import running_agent
from .test_mcp_servers import HTTP_WORKS, VERSIONS, _wire, _world

pytestmark = pytest.mark.anyio


def _canary(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex}"


def _servers(secrets: dict[str, str], http: bool) -> list[Any]:
    stdio = {
        "name": "files",
        "command": sys.executable,
        "args": [
            f"--token={secrets['option']}",
            "--api-key",
            secrets["separate"],
            f"--endpoint=https://bob:{secrets['password']}@mcp.example/v1?token={secrets['query']}",
        ],
        "env": [{"name": "SERVICE_CONFIG", "value": secrets["env"]}],
    }
    entries: list[dict[str, Any]] = [stdio]
    if http:
        entries.append(
            {
                "type": "http",
                "name": "web",
                "url": f"https://carol:{secrets['url']}@mcp.example/x?access_token={secrets['at']}",
                "headers": [
                    {"name": "Authorization", "value": f"Bearer {secrets['bearer']}"},
                    {"name": "X-Workspace-Credential", "value": secrets["header"]},
                ],
            }
        )
    return _wire(entries)


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_host_dying_with_its_mcp_settings_leaves_no_secret_in_the_error_or_log(
    tmp_path: Path, version: str
) -> None:
    world = _world(tmp_path, version)
    world.extra_env["MUSE_SIM_FAULTS"] = "exit:mcp"
    kinds = ["option", "separate", "password", "query", "env"]
    kinds += ["url", "at", "bearer", "header"] if HTTP_WORKS[version] else []
    secrets = {kind: _canary(kind) for kind in kinds}
    async with running_agent(world) as agent:
        servers = _servers(secrets, http=HTTP_WORKS[version])
        session = (
            await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=servers)
        ).session_id
        with pytest.raises(acp.RequestError) as failed:
            await agent.prompt(session, "hello")
    message = str(failed.value)
    assert "MCP server" in message, "the host's last line (its settings) is quoted"
    assert "[redacted]" in message
    log = world.stderr_text()
    assert "host stderr: muse-sim: MCP server 'files'" in log, "the settings reached the log"
    leaked = [kind for kind, secret in secrets.items() if secret in message or secret in log]
    assert leaked == []


@pytest.mark.parametrize("version", VERSIONS)
async def test_status_redacts_the_mcp_servers_secrets_wherever_they_show(
    tmp_path: Path, version: str
) -> None:
    world = _world(tmp_path, version)
    secrets = {kind: _canary(kind) for kind in ("option", "separate", "password", "query", "env")}
    async with running_agent(world) as agent:
        servers = _servers(secrets, http=False)
        session = (
            await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=servers)
        ).session_id
        # The user pastes a server's token into the session's title, which /status shows.
        await agent.prompt(session, f"/rename deploy with {secrets['option']}")
        before = len(agent.client.text(session))
        await agent.prompt(session, "/status")
    status = agent.client.text(session)[before:]
    assert "MCP servers: files (stdio)" in status
    assert f"deploy with {REDACTED}" in status
    assert [kind for kind, secret in secrets.items() if secret in status] == []
