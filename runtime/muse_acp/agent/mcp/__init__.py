"""The editor's MCP servers (ACP ``mcpServers``) as Muse takes them.

``mcp_servers`` checks what the client gave and says which transports the agent offers;
``mcp_config`` makes Muse's per-session config of them. Delivery through a settings overlay
needs a host process and lives in ``hosting.mcp_overlay``.
"""

__all__: list[str] = []
