"""The editor's MCP servers (ACP ``mcpServers``), checked and turned into Muse's session config.

Contract: ``check_servers`` accepts ACP stdio servers (``{name, command, args, env}``: the
command an absolute path or a bare program name looked up on PATH) and http servers (``{type:
"http", name, url, headers}``: an http or https URL) with non-empty, unique names, and refuses
SSE servers and malformed entries with -32602 naming the entry (by index and name) and saying
what to fix. ``check_host`` refuses (-32602) servers the installed Muse cannot take per session,
naming the Muse version needed; ``session_config`` is the ``config`` of ``session/start`` and
``session/resume`` for them (every server ``required``, so one that fails to start fails the
session's start instead of leaving it without its tools). Secrets stay out of sight: env values
and header values are never put in a message, a ``repr`` or a log line, and nothing here is
persisted (a session keeps its servers in memory only). ``startup_failure`` recognises a host's
"Required MCP server ... failed" refusal and words it for the user.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final
from urllib.parse import urlsplit

from muse_acp.host.session_mcp import first_version_with, session_mcp_transports
from muse_acp.redact import redact
from muse_acp.rpc import INVALID_PARAMS, RpcError
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = [
    "McpServerSpec",
    "check_host",
    "check_servers",
    "session_config",
    "startup_failure",
]

NAME_LIMIT: Final = 100
"""Longest server name quoted back in a message."""
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_STARTUP_FAILURE: Final = re.compile(r"required MCP server\b.*\bfailed", re.IGNORECASE | re.DOTALL)
_TRANSPORTS: Final = MappingProxyType({"stdio": "stdio", "http": "streamableHttp"})
"""ACP server kind -> MSP transport tag."""


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """One checked MCP server; secret values are left out of its ``repr``."""

    name: str
    kind: str
    """``stdio`` or ``http``."""
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    url: str = field(default="", repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)


def _entry(index: int, name: str) -> str:
    shown = clip(name.strip(), NAME_LIMIT)
    return f"mcpServers[{index}] ({shown!r})" if shown else f"mcpServers[{index}]"


def _refuse(index: int, name: str, problem: str) -> RpcError:
    return RpcError(INVALID_PARAMS, f"{_entry(index, name)} {problem}")


def _pairs(
    index: int, name: str, pairs: Sequence[acp.EnvVariable | acp.HttpHeader], what: str
) -> tuple[tuple[str, str], ...]:
    seen: set[str] = set()
    for pair in pairs:
        key = pair.name.lower() if what == "header" else pair.name
        valid = (
            _HEADER_NAME.fullmatch(pair.name) is not None
            if what == "header"
            else bool(pair.name) and "=" not in pair.name and "\0" not in pair.name
        )
        if not valid:
            raise _refuse(
                index, name, f"has a {what} with an invalid name; give every {what} a proper name"
            )
        if key in seen:
            raise _refuse(
                index, name, f"sets the {what} {clip(pair.name, 60)!r} twice; keep one of them"
            )
        seen.add(key)
    return tuple((pair.name, pair.value) for pair in pairs)


def _stdio(index: int, server: acp.McpServerStdio) -> McpServerSpec:
    command = server.command
    bare = "/" not in command and os.sep not in command
    if not command.strip() or command != command.strip():
        raise _refuse(index, server.name, "has no usable command; give the program to run")
    if not (os.path.isabs(command) or bare):
        raise _refuse(
            index,
            server.name,
            "has a relative command path; give an absolute path or a bare program name found "
            "on PATH",
        )
    env = _pairs(index, server.name, server.env, "environment variable")
    return McpServerSpec(server.name, "stdio", command, tuple(server.args), env)


def _http(index: int, server: acp.McpServerHttp) -> McpServerSpec:
    try:
        parts = urlsplit(server.url)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        usable = False
    if not usable:  # the URL itself is never quoted: it may carry a token
        raise _refuse(index, server.name, "needs a url that is an http:// or https:// address")
    headers = _pairs(index, server.name, server.headers, "header")
    return McpServerSpec(server.name, "http", url=server.url, headers=headers)


def check_servers(servers: Sequence[acp.McpServer] | None) -> tuple[McpServerSpec, ...]:
    """The client's servers, checked (see the module contract).

    Raises:
        RpcError: INVALID_PARAMS naming the first entry that cannot be used.
    """
    checked: list[McpServerSpec] = []
    names: set[str] = set()
    for index, server in enumerate(servers or ()):
        if not server.name.strip():
            raise _refuse(index, server.name, "has no name; give every MCP server a name")
        if server.name in names:
            raise _refuse(
                index, server.name, "repeats the name of an earlier server; names must be unique"
            )
        names.add(server.name)
        if isinstance(server, acp.McpServerSse):
            raise _refuse(
                index,
                server.name,
                "is an SSE server, which Muse does not support; configure it as an http "
                "(streamable HTTP) or stdio server instead",
            )
        checked.append(
            _http(index, server) if isinstance(server, acp.McpServerHttp) else _stdio(index, server)
        )
    return tuple(checked)


def check_host(servers: Sequence[McpServerSpec], host_version: str | None) -> None:
    """Refuse servers the Muse reporting ``host_version`` cannot take for one session.

    Raises:
        RpcError: INVALID_PARAMS saying which Muse version is needed.
    """
    taken = session_mcp_transports(host_version)
    installed = f"Muse {redact(clip(host_version, 40))}" if host_version else "this Muse"
    for index, server in enumerate(servers):
        transport = _TRANSPORTS[server.kind]
        if transport in taken:
            continue
        needed = first_version_with(transport)
        what = "stdio MCP servers" if server.kind == "stdio" else "http MCP servers"
        upgrade = f"Muse Code {needed} or newer" if needed else "a newer Muse Code"
        raise _refuse(
            index,
            server.name,
            f"cannot be used: {installed} does not take {what} for a single session "
            f"(that needs {upgrade}); upgrade Muse, or remove the server from this session",
        )


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


def startup_failure(error: RpcError, servers: Sequence[McpServerSpec]) -> RpcError | None:
    """The user's error for a host refusing to start a session because one of the editor's
    MCP servers failed to start, or None for any other refusal."""
    if not servers or _STARTUP_FAILURE.search(error.message) is None:
        return None
    named = [server.name for server in servers if server.name in error.message]
    which = f"the MCP server {clip(named[0], NAME_LIMIT)!r}" if named else "an MCP server"
    detail = redact(clip(error.message.strip(), 300))
    return RpcError(
        INVALID_PARAMS,
        f"Muse could not start {which} that the editor configured for this session ({detail}). "
        "Check that server's command or address in the editor's MCP settings, or remove it, "
        "then send the prompt again",
        {"mcpServer": named[0] if named else None},
    )
