"""``/mcp``: the MCP servers the editor gave this session, listed without a model turn.

Contract: ``mcp_text`` lists each server of the session (``AcpSession.mcp_servers``) on one
line, in the order the editor sent them: its name and its transport (``stdio`` or ``http``),
and how many environment variables or headers it carries, never their values, its command, its
arguments or its URL (any of which may hold a credential). It says that the list is what muse-acp
passes to Muse when the session's host starts, not proof that a server runs: a required server
that fails to start fails the prompt with its own error. With no servers it says so. ``run_mcp``
sends that text as the one reply of ``/mcp``; no host is involved.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Final

from muse_acp.agent.context import AgentContext
from muse_acp.agent.mcp.mcp_servers import McpServerSpec
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.turns.work import SessionWork
from muse_acp.text import clip
from muse_acp_wire import acp

__all__ = ["mcp_text", "run_mcp"]

_NAME_SHOWN: Final = 100
_TRANSPORT: Final = MappingProxyType({"stdio": "stdio", "http": "http"})


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _line(server: McpServerSpec) -> str:
    transport = _TRANSPORT.get(server.kind, "unknown transport")
    extras = []
    if server.env:
        extras.append(_count(len(server.env), "environment variable", "environment variables"))
    if server.headers:
        extras.append(_count(len(server.headers), "header", "headers"))
    carried = f"; {', '.join(extras)} (values hidden)" if extras else ""
    return f"- {clip(server.name, _NAME_SHOWN)!r}: {transport}{carried}"


def mcp_text(servers: Sequence[McpServerSpec]) -> str:
    """The ``/mcp`` reply for ``servers`` (see the module contract)."""
    if not servers:
        return (
            "This session has no MCP servers: the editor sent none when it opened the session. "
            "Add them in the editor's agent settings, then start or load a session."
        )
    head = f"MCP servers for this session ({len(servers)}):"
    note = (
        "muse-acp passes these to Muse when the session's host starts; a server that fails to "
        "start fails the prompt with an error naming it."
    )
    return "\n".join([head, *(_line(server) for server in servers), note])


async def run_mcp(
    ctx: AgentContext, session: AcpSession, work: SessionWork, _: str | None
) -> acp.StopReason:
    """``/mcp``: list the session's MCP servers (see the module contract)."""
    await session.say(mcp_text(session.mcp_servers))
    return "end_turn"
