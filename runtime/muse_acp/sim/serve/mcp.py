"""Per-session MCP servers: ``config.mcpServers`` on ``session/start`` and ``session/resume``.

Contract: a version whose bundle declares per-session MCP servers takes ``config.mcpServers``
(the transports it declares; another transport is -32602, as a real host fails to decode it);
a version whose bundle lists ``sessionMcp`` as grantable takes them only from a connection
granted that capability (else -32010 ``capabilityRequired``). Older versions ignore the key, as
hosts ignore configuration they do not know. What arrived is in the request capture
(``MUSE_SIM_CAPTURE``). The servers of Muse's settings file (``mcp_settings``) are started with
every session too, on every version; a session's own server replaces a settings server of the
same name, and a settings entry that is no MCP server fails the request. A required server (the
default mode) that cannot start (a stdio command that is not found, or any server named
``sim-broken...``) fails the request the way real hosts report it: ``Required MCP server
"<name>" failed during startup: could not be reached``; an optional one is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping

from pydantic import ValidationError

from muse_acp.host.session_mcp import SESSION_MCP, session_mcp_transports
from muse_acp.rpc import RpcError
from muse_acp.sim.options.faults import exit_now
from muse_acp.sim.state import errors
from muse_acp.sim.state.context import HostContext
from muse_acp_wire.msp import (
    ErrorData,
    SessionConfig,
    SessionMcpServerConfig,
    SessionMcpStdioServer,
)

__all__ = ["BROKEN_PREFIX", "check_session_mcp"]

BROKEN_PREFIX = "sim-broken"


def _starts(name: str, server: object) -> bool:
    if name.startswith(BROKEN_PREFIX):
        return False
    if isinstance(server, SessionMcpStdioServer):
        command = server.command
        if os.path.isabs(command):
            return os.access(command, os.X_OK)
        return shutil.which(command) is not None
    return True


def _from_settings(ctx: HostContext) -> dict[str, SessionMcpServerConfig]:
    raw = ctx.options.settings_mcp
    if not raw:
        return {}
    try:
        parsed = SessionConfig.model_validate({"mcpServers": dict(raw)}).mcp_servers
    except ValidationError:
        raise RpcError(
            errors.KIND_CODES["internal"],
            "settings file mcpServers: an entry is not a stdio or streamableHttp MCP server",
            {"kind": "internal", "retryable": False},
        ) from None
    return dict(parsed or {})


def _dump(server: SessionMcpServerConfig) -> str:
    return json.dumps(server.model_dump(mode="json", by_alias=True, exclude_none=True))


def check_session_mcp(ctx: HostContext, method: str, config: SessionConfig | None) -> None:
    """Refuse ``config.mcpServers`` this version or connection cannot take, and fail when a
    required server (the session's or the settings file's) cannot start (see the module
    contract)."""
    servers = config.mcp_servers if config is not None else None
    taken = session_mcp_transports(ctx.profile.version.version)
    if not servers or not taken:
        servers = None  # hosts without per-session servers ignore the key
    else:
        _check_session_servers(ctx, method, servers, taken)
    started = {**_from_settings(ctx), **(servers or {})}
    if ctx.options.faults.exits_at("mcp"):
        exit_now("exit:mcp", [f"MCP server {name!r}: {_dump(e)}" for name, e in started.items()])
    for name, server in started.items():
        if server.mode != "optional" and not _starts(name, server):
            raise RpcError(
                errors.KIND_CODES["internal"],
                f'Required MCP server "{name}" failed during startup: could not be reached',
                {"kind": "internal", "retryable": False},
            )


def _check_session_servers(
    ctx: HostContext,
    method: str,
    servers: Mapping[str, SessionMcpServerConfig],
    taken: frozenset[str],
) -> None:
    if SESSION_MCP in ctx.profile.facts.grantable and SESSION_MCP not in ctx.granted:
        raise errors.host_error(
            f"{method} config.mcpServers requires the {SESSION_MCP} capability",
            ErrorData(kind="capabilityRequired", retryable=False, capability=SESSION_MCP),
        )
    for name, server in servers.items():
        if server.transport not in taken:
            raise errors.invalid_params(
                f"{method} config.mcpServers: unknown transport for server {name!r}"
            )
