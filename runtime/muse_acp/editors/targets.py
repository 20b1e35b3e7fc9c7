"""Where Zed and JetBrains IDEs keep their agent settings, and the entry muse-acp adds there.

Facts (read from Zed's sources and JetBrains' AI Assistant documentation):

- Zed reads custom agents from ``agent_servers`` in its user ``settings.json`` (JSON with
  comments and trailing commas): ``$FLATPAK_XDG_CONFIG_HOME/zed`` or ``$XDG_CONFIG_HOME/zed``
  (else ``~/.config/zed``) on Linux, ``~/.config/zed`` on macOS, ``%APPDATA%\\Zed`` on Windows.
  An entry of ``"type": "custom"`` takes ``command``, ``args`` and ``env`` (and the user's own
  ``default_mode``, ``default_model``, ... which an update leaves alone).
- JetBrains AI Assistant reads ``~/.jetbrains/acp.json``: ``agent_servers`` entries of
  ``command`` (an absolute path), ``args``, ``env`` and the per-agent ``use_idea_mcp`` /
  ``use_custom_mcp`` that override the file's ``default_mcp_settings``.

Contract: ``settings_path`` finds an editor's file from an environment, home and platform;
``launch`` is how an editor starts this installation of muse-acp, by absolute path.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias

__all__ = ["DEFAULT_NAME", "Editor", "Launch", "entry", "launch", "settings_path"]

Editor: TypeAlias = Literal["zed", "jetbrains"]
DEFAULT_NAME: Final = "Muse Code"
"""The entry's key in ``agent_servers``: the name the editor shows."""


@dataclass(frozen=True, slots=True)
class Launch:
    """The command line an editor runs to start muse-acp."""

    command: str
    args: tuple[str, ...]


def settings_path(
    editor: Editor,
    environ: Mapping[str, str] = os.environ,
    home: Path | None = None,
    platform: str = sys.platform,
) -> Path:
    """The settings file ``editor`` reads for the user whose ``home`` and ``environ`` these are."""
    home = home if home is not None else Path.home()
    if editor == "jetbrains":
        return home / ".jetbrains" / "acp.json"
    if platform == "win32":
        appdata = environ.get("APPDATA")
        base = Path(appdata) if appdata else home / "AppData" / "Roaming"
        return base / "Zed" / "settings.json"
    if platform == "darwin":
        return home / ".config" / "zed" / "settings.json"
    for variable in ("FLATPAK_XDG_CONFIG_HOME", "XDG_CONFIG_HOME"):
        value = environ.get(variable)
        if value and Path(value).is_absolute():
            return Path(value) / "zed" / "settings.json"
    return home / ".config" / "zed" / "settings.json"


def launch(executable: str = sys.executable) -> Launch:
    """This installation's ``muse-acp serve`` by absolute path: the ``muse-acp`` launcher beside
    ``executable`` when there is one, else ``executable -m muse_acp serve``."""
    # Not resolved: a virtual environment's interpreter is a link that must stay one.
    python = Path(os.path.abspath(executable))
    script = python.parent / ("muse-acp.exe" if sys.platform == "win32" else "muse-acp")
    if script.is_file() and os.access(script, os.X_OK):
        return Launch(str(script), ("serve",))
    return Launch(str(python), ("-m", "muse_acp", "serve"))


def entry(editor: Editor, how: Launch) -> dict[str, object]:
    """The members muse-acp owns in its ``agent_servers`` entry (``env`` aside)."""
    owned: dict[str, object] = {"type": "custom"} if editor == "zed" else {}
    owned.update(command=how.command, args=list(how.args))
    return owned
