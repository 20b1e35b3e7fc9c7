"""The editor's MCP servers (ACP ``mcpServers``), checked and turned into Muse's session config.

Contract: ``check_servers`` accepts stdio servers (an absolute or PATH command) and http servers
(an http or https URL) with non-empty, unique names. ``delivery`` says how they reach the
installed Muse: ``native`` in ``config.mcpServers``, else ``overlay`` (``mcp_overlay``) on hosts
verified for it (``mcpOverlay``); what reaches a Muse either way is ``session_mcp.transports``.
``startup_failure`` words a host's "Required MCP server ... failed" for the user. Secrets stay
out of sight: env and header values are never in a message, ``repr`` or log line, never
persisted, and are given to the redactor (``secrets_of``).

Errors: -32602 naming the entry (index and name) and what to fix for SSE and malformed servers,
or the Muse version needed for servers the installed Muse cannot take (``check_host``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, TypeAlias
from urllib.parse import urlsplit

from muse_acp.config import ENV_TRUST_NEWER
from muse_acp.host.bindings import parse_version
from muse_acp.host.features import HostFeatures
from muse_acp.host.session_mcp import OVERLAY_TRANSPORTS, session_mcp_transports, transports
from muse_acp.host.versions import VERIFIED_HOSTS, newer_than_verified
from muse_acp.redact import (
    SESSION_SECRETS,
    env_secrets,
    header_secrets,
    redact,
    secret_arguments,
    url_secrets,
)
from muse_acp.rpc import INVALID_PARAMS, RpcError
from muse_acp.text import clip
from muse_acp_wire import acp
from muse_acp_wire.msp_bundles import BUNDLES

__all__ = [
    "Delivery",
    "McpServerSpec",
    "check_host",
    "check_servers",
    "delivery",
    "secrets_of",
    "startup_failure",
]

NAME_LIMIT: Final = 100
"""Longest server name quoted back in a message."""
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_STARTUP_FAILURE: Final = re.compile(r"required MCP server\b.*\bfailed", re.IGNORECASE | re.DOTALL)
_TRANSPORTS: Final = MappingProxyType({"stdio": "stdio", "http": "streamableHttp"})
"""ACP server kind -> MSP transport tag."""

Delivery: TypeAlias = Literal["native", "overlay"]
"""``native``: in ``config.mcpServers``; ``overlay``: in a private settings file."""


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


def secrets_of(server: McpServerSpec) -> list[str]:
    """What of ``server`` is secret: env and header values that look secret by name or value
    (``env_secrets``, ``header_secrets``), secret-looking arguments and the URL's credentials;
    ordinary values (``HOME``, ``Accept``) are not, so messages quoting them stay readable."""
    found = [secret for name, value in server.env for secret in env_secrets(name, value)]
    found += [secret for name, value in server.headers for secret in header_secrets(name, value)]
    return found + secret_arguments(server.args) + url_secrets(server.url)


def check_servers(servers: Sequence[acp.McpServer] | None) -> tuple[McpServerSpec, ...]:
    """The client's servers, checked (see the module contract); the secrets of those accepted
    are given to the redactor (``redact.SESSION_SECRETS``) before anything can quote them.

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
    for spec in checked:
        SESSION_SECRETS.remember(secrets_of(spec))
    return tuple(checked)


def _needed(transport: str, installed: str | None) -> str | None:
    """The oldest Muse, newer than ``installed``, that takes ``transport`` some way."""
    floor = parse_version(installed)
    candidates = {v for v in BUNDLES if transport in session_mcp_transports(v)}
    if transport in OVERLAY_TRANSPORTS:
        candidates |= VERIFIED_HOSTS["mcpOverlay"]
    keyed = [
        (key, version)
        for version in candidates
        if (key := parse_version(version)) is not None and (floor is None or key > floor)
    ]
    return min(keyed)[1] if keyed else None


def delivery(servers: Sequence[McpServerSpec], features: HostFeatures) -> Delivery:
    """How ``servers`` reach the Muse offering ``features`` (see the module contract).

    Raises:
        RpcError: INVALID_PARAMS saying which Muse version is needed.
    """
    host_version = features.version
    native = session_mcp_transports(host_version)
    # One way per session: a host that takes them all natively gets them so; else all go
    # through the overlay, so the host reports every server the same way.
    if all(_TRANSPORTS[server.kind] in native for server in servers):
        return "native"
    overlay = transports(features)
    for index, server in enumerate(servers):
        transport = _TRANSPORTS[server.kind]
        if transport in overlay:
            continue
        installed = f"Muse {redact(clip(host_version, 40))}" if host_version else "this Muse"
        needed = _needed(transport, host_version)
        what = "stdio MCP servers" if server.kind == "stdio" else "http MCP servers"
        upgrade = f"Muse Code {needed} or newer" if needed else "a newer Muse Code"
        trust = (
            f" (or set {ENV_TRUST_NEWER}=1 to pass it through a private settings file, which "
            "is not verified on this Muse)"
            if newer_than_verified("mcpOverlay", host_version)
            else ""
        )
        raise _refuse(
            index,
            server.name,
            f"cannot be used: muse-acp cannot pass {what} to {installed} (that needs "
            f"{upgrade}); upgrade Muse{trust}, or remove the server from this session",
        )
    return "overlay"


def check_host(servers: Sequence[McpServerSpec], features: HostFeatures) -> None:
    """Refuse servers that cannot reach the Muse offering ``features`` (``delivery``).

    Raises:
        RpcError: INVALID_PARAMS saying which Muse version is needed.
    """
    if servers:
        delivery(servers, features)


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
