"""What ``muse-acp install EDITOR`` and ``muse-acp uninstall EDITOR`` do, and what they print.

Contract: ``parse_env`` reads ``--env NAME=VALUE`` options (``ValueError`` naming a bad one).
``run_install`` / ``run_uninstall`` find the settings file (``--settings`` or the editor's own,
see ``targets``), compute the change (``install``), and with ``dry_run`` print it as a unified
diff and write nothing; else write it with a backup and say what changed, or say that nothing
had to. They return the exit status: 0 done (or nothing to do), 1 when the file cannot be
read, understood or written (the message on stderr says why and what to do).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

from muse_acp.editors.install import (
    SettingsError,
    diff,
    installed,
    read_settings,
    uninstalled,
    write_settings,
)
from muse_acp.editors.targets import Editor, Launch, launch, settings_path

__all__ = ["parse_env", "run_install", "run_uninstall"]

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESTART: Final = {
    "zed": "Restart Zed to see it in the agent panel's menu.",
    "jetbrains": "Open AI Chat again (or restart the IDE) to see it among the agents.",
}


def parse_env(pairs: Sequence[str]) -> dict[str, str]:
    """``NAME=VALUE`` options as a mapping, in the order given (a repeated name: the last)."""
    env: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not _NAME.fullmatch(name):
            raise ValueError(
                f"--env {pair!r} is not NAME=VALUE with NAME made of letters, digits and "
                "underscores (not starting with a digit)"
            )
        env[name] = value
    return env


def _apply(
    path: Path, old: str | None, new: str | None, dry_run: bool, out: TextIO, done: str
) -> int:
    if new is None or new == old:
        out.write(f"Nothing to change in {path}.\n")
        return 0
    if dry_run:
        out.write(diff(path, old, new))
        out.write(f"(--dry-run: {path} was not changed)\n")
        return 0
    backup = write_settings(path, new)
    out.write(f"{done} {path}")
    out.write(f" (the previous file is kept as {backup}).\n" if backup else ".\n")
    return 0


def _failed(error: SettingsError | OSError, err: TextIO) -> int:
    if isinstance(error, OSError):
        where = f" {error.filename}" if error.filename else ""
        err.write(f"muse-acp: cannot write{where}: {error.strerror or error}\n")
    else:
        err.write(f"muse-acp: {error}\n")
    return 1


def run_install(
    editor: Editor,
    *,
    settings: Path | None = None,
    env: dict[str, str] | None = None,
    name: str,
    dry_run: bool = False,
    extra: dict[str, object] | None = None,
    how: Launch | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Add or update muse-acp's entry ``name`` in ``editor``'s settings (see the contract)."""
    out, err = out or sys.stdout, err or sys.stderr
    path = settings or settings_path(editor)
    how = how or launch()
    try:
        old = read_settings(path)
        new = installed(editor, old, path, how, env, name, extra)
        status = _apply(path, old, new, dry_run, out, f'Added "{name}" (muse-acp) to')
    except (SettingsError, OSError) as error:
        return _failed(error, err)
    if not dry_run and new != old:
        out.write(f"{_RESTART[editor]} It runs: {how.command} {' '.join(how.args)}\n")
    return status


def run_uninstall(
    editor: Editor,
    *,
    settings: Path | None = None,
    name: str,
    dry_run: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Remove muse-acp's entry ``name`` from ``editor``'s settings (see the contract)."""
    out, err = out or sys.stdout, err or sys.stderr
    path = settings or settings_path(editor)
    try:
        old = read_settings(path)
        new = uninstalled(old, path, name)
        return _apply(path, old, new, dry_run, out, f'Removed "{name}" from')
    except (SettingsError, OSError) as error:
        return _failed(error, err)
