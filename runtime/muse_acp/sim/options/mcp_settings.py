"""The MCP servers of Muse's settings file, as muse-sim reads them when ``serve`` starts.

Contract: real Muse reads ``$XDG_CONFIG_HOME/muse/settings.json`` at startup, MCP servers
included (``mcpServers``, or the older ``mcp_servers``; the canonical key wins a name both
have), on every version. muse-sim does the same, but only when ``XDG_CONFIG_HOME`` is set: it
never reads the real ``~/.config``, so a developer's own Muse settings cannot leak into a test.
No file is no servers; a file that is not a JSON object, or servers that are not MCP server
entries, stop ``serve`` with a message (``SettingsError``), as a host that cannot read its
settings does not start. The servers are started with each session as ``mcp`` says, like the
session's own. ``capture_settings`` appends, when ``MUSE_SIM_SETTINGS_CAPTURE`` names a file (a
test's own), what was read: the servers and the owner-only permissions of the settings file and
of the config home, so a test can see what reached the host without reading its overlay.
Light on imports: only ``serve`` uses it, before the models are loaded.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

__all__ = ["SETTINGS_CAPTURE_ENV", "SettingsError", "capture_settings", "read_mcp_settings"]

SETTINGS_CAPTURE_ENV: Final = "MUSE_SIM_SETTINGS_CAPTURE"
_KEYS: Final = ("mcp_servers", "mcpServers")


class SettingsError(ValueError):
    """Muse's settings file cannot be read; the message says which file and why."""


def _path(env: Mapping[str, str]) -> Path | None:
    home = env.get("XDG_CONFIG_HOME", "")
    return Path(home) / "muse" / "settings.json" if home else None


def read_mcp_settings(env: Mapping[str, str]) -> Mapping[str, Any]:
    """The MCP servers of the settings file, by name, unparsed (``mcp`` parses them).

    Raises:
        SettingsError: the file is unreadable or not a settings object.
    """
    path = _path(env)
    if path is None:
        return MappingProxyType({})
    try:
        settings = json.loads(path.read_bytes())
    except FileNotFoundError:
        return MappingProxyType({})
    except (OSError, ValueError) as exc:
        raise SettingsError(f"cannot read settings file {path}: {exc}") from None
    if not isinstance(settings, dict):
        raise SettingsError(f"settings file {path} is not a JSON object")
    servers: dict[str, Any] = {}
    for key in _KEYS:
        table = settings.get(key)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise SettingsError(f"settings file {path}: {key} is not an object")
        servers.update(table)
    return MappingProxyType(servers)


def _mode(path: Path) -> str:
    return oct(stat.S_IMODE(os.stat(path).st_mode))


def capture_settings(env: Mapping[str, str], servers: Mapping[str, Any]) -> None:
    """Record what was read for a test (see the module contract)."""
    target = env.get(SETTINGS_CAPTURE_ENV, "")
    path = _path(env)
    if not target or path is None or not servers:
        return
    record = {
        "configHome": str(path.parent.parent),
        "configHomeMode": _mode(path.parent.parent),
        "settingsMode": _mode(path),
        "mcpServers": dict(servers),
    }
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
