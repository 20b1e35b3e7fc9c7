"""``muse-acp install`` / ``uninstall``: muse-acp's entry in an editor's settings, and nothing else.

Contract: ``installed`` and ``uninstalled`` are pure: from a settings text (None for no file)
they give the new text, changing only muse-acp's entry under ``agent_servers`` (``jsonc`` keeps
every other byte; an ``agent_servers`` left blank goes too). An entry already there keeps the
members muse-acp does not own, and its ``env`` unless one is given. Running either twice
changes nothing the second time. ``write_settings`` replaces the file atomically (a temporary
file beside it, flushed to disk, renamed over it, with the old file's mode, or owner-only for a
new one), through a link to where the link points, after copying the old file to
``backup_path``. ``diff`` is the unified diff ``--dry-run`` prints. Errors are
``SettingsError`` with what to fix.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from muse_acp.editors import jsonc
from muse_acp.editors.targets import Editor, Launch, entry

__all__ = [
    "BACKUP_SUFFIX",
    "SETTINGS_LIMIT",
    "SettingsError",
    "backup_path",
    "diff",
    "installed",
    "read_settings",
    "uninstalled",
    "write_settings",
]

SETTINGS_LIMIT: Final = 16 * 1024 * 1024
"""The largest settings file read: far above any editor's, well below a mistake's."""
BACKUP_SUFFIX: Final = ".muse-acp-backup"
SERVERS: Final = "agent_servers"


class SettingsError(Exception):
    """The settings file cannot be read, understood or written; the message says why."""


def _parsed(text: str, path: Path) -> jsonc.Node:
    try:
        root = jsonc.parse(text)
    except jsonc.JsoncError as error:
        raise SettingsError(f"{path} is not valid JSON (with comments): {error}") from None
    if root.members is None:
        raise SettingsError(f"{path} does not hold a JSON object; fix or move it, then retry")
    return root


def _servers(root: jsonc.Node, path: Path) -> jsonc.Node | None:
    found = jsonc.member(root, SERVERS)
    if found is not None and found.value.members is None:
        raise SettingsError(f'"{SERVERS}" in {path} is not an object; fix it, then retry')
    return found.value if found is not None else None


def installed(
    editor: Editor,
    text: str | None,
    path: Path,
    how: Launch,
    env: Mapping[str, str] | None,
    name: str,
    extra: Mapping[str, object] | None = None,
) -> str:
    """The settings text with muse-acp's entry ``name`` added or brought up to date, with the
    ``extra`` members given (JetBrains' MCP flags)."""
    owned = {**entry(editor, how), **(extra or {})}
    if text is None or not text.strip():
        document = {SERVERS: {name: {**owned, "env": dict(env or {})}}}
        return jsonc.render(document, "", "  ") + "\n"
    root = _parsed(text, path)
    servers = _servers(root, path)
    if servers is None:
        return jsonc.set_member(text, root, SERVERS, {name: {**owned, "env": dict(env or {})}})
    existing = jsonc.member(servers, name)
    if existing is None:
        return jsonc.set_member(text, servers, name, {**owned, "env": dict(env or {})})
    if existing.value.members is None:
        raise SettingsError(f'"{SERVERS}"."{name}" in {path} is not an object; fix it, then retry')
    wanted = dict(owned)
    if env is not None:
        wanted["env"] = dict(env)
    for key, value in wanted.items():
        # Each edit moves what follows it: find the entry again in the new text.
        servers = _servers(_parsed(text, path), path)
        assert servers is not None
        found = jsonc.member(servers, name)
        assert found is not None
        text = jsonc.set_member(text, found.value, key, value)
    return text


def uninstalled(text: str | None, path: Path, name: str) -> str | None:
    """The settings text without the entry ``name`` (None when there is no file)."""
    if text is None:
        return None
    root = _parsed(text, path)
    servers = _servers(root, path)
    if servers is None or jsonc.member(servers, name) is None:
        return text
    text = jsonc.remove_member(text, servers, name)
    left = _servers(_parsed(text, path), path)
    if left is not None and not text[left.start + 1 : left.end - 1].strip():
        # Nothing but muse-acp's entry was there, not even a comment: as before install.
        text = jsonc.remove_member(text, _parsed(text, path), SERVERS)
    return text


def read_settings(path: Path) -> str | None:
    """The settings text at ``path``, or None when there is no file."""
    try:
        with path.open("rb") as handle:
            data = handle.read(SETTINGS_LIMIT + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise SettingsError(f"cannot read {path}: {error.strerror or error}") from None
    if len(data) > SETTINGS_LIMIT:
        raise SettingsError(f"{path} is over {SETTINGS_LIMIT // 1024 // 1024} MiB: not settings")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SettingsError(f"{path} is not UTF-8 text; fix or move it, then retry") from None


def backup_path(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def diff(path: Path, old: str | None, new: str) -> str:
    """What the change does, as a unified diff of ``path``."""
    return "".join(
        difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=str(path) if old is not None else "/dev/null",
            tofile=str(path),
        )
    )


def write_settings(path: Path, text: str) -> Path | None:
    """Replace the file at ``path`` with ``text`` (see the module contract); returns the backup
    made of the old file, or None when there was none."""
    target = Path(os.path.realpath(path))
    backup: Path | None = None
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600  # a new file may soon hold an API key passed with --env
        target.parent.mkdir(parents=True, exist_ok=True)
    else:
        backup = backup_path(target)
        shutil.copy2(target, backup)
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    if hasattr(os, "O_DIRECTORY"):  # the rename itself reaches the disk
        directory = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
    return backup
