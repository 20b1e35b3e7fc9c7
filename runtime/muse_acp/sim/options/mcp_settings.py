"""Muse's settings file, as muse-sim reads it when ``serve`` starts: MCP servers and the
default permission profile.

Contract: real Muse reads ``$XDG_CONFIG_HOME/muse/settings.json`` at startup, MCP servers
included (``mcpServers``, or the older ``mcp_servers``; the canonical key wins a name both
have), on every version. muse-sim does the same, but only when ``XDG_CONFIG_HOME`` is set: it
never reads the real ``~/.config``, so a developer's own Muse settings cannot leak into a test.
No file is no servers; a file that is not a JSON object, or servers that are not MCP server
entries, stop ``serve`` with a message (``SettingsError``), as a host that cannot read its
settings does not start. The servers are started with each session as ``mcp`` says, like the
session's own. ``read_settings`` also returns ``permissions.default_profile`` (None when the
file names none), the profile new sessions get (``commands.check_profile`` says which one a
session cannot get). ``capture_settings`` appends, when ``MUSE_SIM_SETTINGS_CAPTURE`` names a
file (a test's own), what was read (servers, profile, the files' permissions), so a test sees
what reached the host. Light on imports: ``serve`` uses it before the models are loaded.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, NamedTuple

__all__ = [
    "SETTINGS_CAPTURE_ENV",
    "MuseSettings",
    "SettingsError",
    "capture_settings",
    "read_mcp_settings",
    "read_settings",
]

SETTINGS_CAPTURE_ENV: Final = "MUSE_SIM_SETTINGS_CAPTURE"
_KEYS: Final = ("mcp_servers", "mcpServers")


class SettingsError(ValueError):
    """Muse's settings file cannot be read; the message says which file and why."""


class MuseSettings(NamedTuple):
    """What ``serve`` takes from Muse's settings file."""

    servers: Mapping[str, Any]
    """The MCP servers, by name, unparsed (``mcp`` parses them)."""
    default_profile: str | None
    """``permissions.default_profile``: the permission profile new sessions get (None: none)."""


_NONE: Final = MuseSettings(MappingProxyType({}), None)


def _path(env: Mapping[str, str]) -> Path | None:
    home = env.get("XDG_CONFIG_HOME", "")
    return Path(home) / "muse" / "settings.json" if home else None


def read_mcp_settings(env: Mapping[str, str]) -> Mapping[str, Any]:
    """The MCP servers of the settings file (``read_settings``).

    Raises:
        SettingsError: the file is unreadable or not a settings object.
    """
    return read_settings(env).servers


def _default_profile(settings: Mapping[str, Any]) -> str | None:
    permissions = settings.get("permissions")
    profile = permissions.get("default_profile") if isinstance(permissions, dict) else None
    return profile if isinstance(profile, str) else None


def read_settings(env: Mapping[str, str]) -> MuseSettings:
    """The MCP servers and the default permission profile of the settings file.

    Raises:
        SettingsError: the file is unreadable or not a settings object.
    """
    path = _path(env)
    if path is None:
        return _NONE
    try:
        settings = json.loads(path.read_bytes())
    except FileNotFoundError:
        return _NONE
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
    return MuseSettings(MappingProxyType(servers), _default_profile(settings))


def _mode(path: Path) -> str:
    return oct(stat.S_IMODE(os.stat(path).st_mode))


def capture_settings(
    env: Mapping[str, str], servers: Mapping[str, Any], default_profile: str | None = None
) -> None:
    """Record what was read for a test (see the module contract)."""
    target = env.get(SETTINGS_CAPTURE_ENV, "")
    path = _path(env)
    if not target or path is None or not (servers or default_profile):
        return
    record = {
        "configHome": str(path.parent.parent),
        "configHomeMode": _mode(path.parent.parent),
        "settingsMode": _mode(path),
        "mcpServers": dict(servers),
        "defaultProfile": default_profile,
    }
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
