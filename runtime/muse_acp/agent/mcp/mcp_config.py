"""The editor's MCP servers as Muse's session config: the ``config`` of ``session/start`` and
``session/resume`` (``session_config``).

Contract: every server is ``required``, so one that fails to start fails the session's start
instead of leaving it without its tools; the settings overlay (``mcp_overlay``) carries the same
entries. No servers, no config. The checks that come first are ``mcp_servers``'.
"""

from __future__ import annotations

from collections.abc import Sequence

from muse_acp.agent.mcp.mcp_servers import McpServerSpec
from muse_acp_wire import msp

__all__ = ["session_config"]


def session_config(servers: Sequence[McpServerSpec]) -> msp.SessionConfig | None:
    """The ``config`` carrying ``servers`` to Muse, or None when there are none."""
    if not servers:
        return None
    entries: dict[str, msp.SessionMcpServerConfig] = {}
    for server in servers:
        if server.kind == "stdio":
            entries[server.name] = msp.SessionMcpStdioServer(
                transport="stdio",
                command=server.command,
                args=list(server.args),
                env=dict(server.env),
                mode="required",
            )
        else:
            entries[server.name] = msp.SessionMcpHttpServer(
                transport="streamableHttp",
                url=server.url,
                headers=dict(server.headers),
                mode="required",
            )
    return msp.SessionConfig(mcp_servers=entries)
