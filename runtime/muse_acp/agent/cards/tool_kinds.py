"""The ACP kind of a Muse tool: what an editor shows as the tool card's icon and groups by.

Contract: ``kind_for_tool`` maps Muse's tool names to ACP tool kinds (shell tools execute, file
tools read or edit, search tools search, fetch fetches); any other tool is ``other``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from muse_acp_wire import acp

__all__ = ["kind_for_tool"]

_TOOL_KINDS: Final[Mapping[str, acp.ToolKind]] = MappingProxyType(
    {
        "bash": "execute",
        "powershell": "execute",
        "read_file": "read",
        "write_file": "edit",
        "edit_file": "edit",
        "search": "search",
        "web_search": "search",
        "web_fetch": "fetch",
    }
)
"""ACP kind per Muse tool name; other tools are ``other``."""


def kind_for_tool(tool: str) -> acp.ToolKind:
    """The ACP kind of a Muse tool name (also for permission requests, which name only it)."""
    return _TOOL_KINDS.get(tool, "other")
