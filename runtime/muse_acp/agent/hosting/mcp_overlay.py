"""The settings overlay: a host's private view of the user's Muse settings, carrying the
editor's MCP servers for a Muse that does not take them per session (``mcp_servers.delivery``
says which host gets them this way) and an interactive permission profile in place of a saved
``:auto-review`` (``permission_profile``), with or without servers.

Contract: ``read_user_settings`` reads the user's ``muse/settings.json`` off the event loop
within ``SETTINGS_TIMEOUT`` seconds, only if it is a regular file. ``settings_overlay`` makes,
for one host process, a private config home under ``overlay_root`` whose settings are the user's
with the profile made interactive and the editor's servers added, everything else (credentials
included) linked to the user's own files, only read, never written nor copied, and yields the
host's environment; the overlay is removed when the block ends, else by ``sweep`` at the next
start. Secrets go into the overlay's settings file only. Errors: a settings file unreadable,
not a regular file or not a JSON object, or an overlay not made in time, is a ``SetupFailure``
saying what to fix.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

import anyio

from muse_acp.agent.errors import failures
from muse_acp.agent.hosting.hosts import SetupFailure
from muse_acp.agent.hosting.permission_profile import interactive, overlay_failed
from muse_acp.agent.hosting.private_files import (
    RUN_DIR,
    off_loop,
    run_dir,
    sweep_ended,
)
from muse_acp.agent.mcp.mcp_config import session_config
from muse_acp.agent.mcp.mcp_servers import McpServerSpec
from muse_acp.files import NotRegularFile, read_regular

__all__ = [
    "CONFIG_HOME_ENV",
    "SETTINGS_TIMEOUT",
    "UserSettings",
    "overlay_root",
    "read_user_settings",
    "settings_overlay",
    "sweep",
    "user_config_home",
]

logger: Final = logging.getLogger("muse_acp.agent")

CONFIG_HOME_ENV: Final = "XDG_CONFIG_HOME"
MUSE_DIR: Final = "muse"
SETTINGS_FILE: Final = "settings.json"
SETTINGS_LIMIT: Final = 1 << 20
"""Largest user settings file read (1 MiB); a bigger one is no settings file Muse wrote."""
SETTINGS_TIMEOUT: Final = 10.0
"""Seconds the user's settings file may take to be read, and an overlay to be made or removed."""
_SERVER_KEYS: Final = ("mcp_servers", "mcpServers")
"""Where Muse's settings keep MCP servers, the older spelling first (the canonical one wins)."""
_OVERLAYS: Final = "settings-overlays"


@dataclass(frozen=True, slots=True)
class UserSettings:
    """The user's own Muse settings, as read for an overlay."""

    home: Path
    """The config home Muse would read without an overlay."""
    path: Path
    document: Mapping[str, Any]


def overlay_root(data_dir: Path) -> Path:
    """Where this user's muse-acp processes keep their overlays."""
    return data_dir / RUN_DIR / _OVERLAYS


def user_config_home(environ: Mapping[str, str]) -> Path:
    """The config home Muse would read without an overlay (the XDG rule)."""
    explicit = environ.get(CONFIG_HOME_ENV, "")
    if explicit and os.path.isabs(explicit):
        return Path(explicit)
    home = environ.get("HOME") or str(Path.home())
    return Path(home) / ".config"


def _refused(problem: str, *, servers: bool = True) -> SetupFailure:
    """The failure of an overlay that carries ``servers``, else one only for the profile."""
    error = failures.settings_overlay_failed(problem) if servers else overlay_failed(problem)
    return SetupFailure(error.code, error.message, error.data)


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)  # mkdir's mode is cut by the umask; this one must be exact


def _read_settings(path: Path) -> dict[str, Any]:
    try:
        raw = read_regular(path, SETTINGS_LIMIT)
    except NotRegularFile:
        raise _refused(
            f"your Muse settings file {path} is not a regular file (a FIFO, a device or a "
            "folder); put Muse's own settings file there, or remove it."
        ) from None
    except OSError as error:
        raise _refused(
            f"your Muse settings file {path} could not be read ({error.strerror or error})."
        ) from None
    if raw is None:
        return {"schema_version": 1}
    try:
        settings = json.loads(raw) if len(raw) <= SETTINGS_LIMIT else None
    except ValueError:
        settings = None
    if not isinstance(settings, dict):
        raise _refused(f"your Muse settings file {path} is not a JSON object Muse could read.")
    return settings


async def read_user_settings(environ: Mapping[str, str]) -> UserSettings:
    """The user's own settings (see the module contract), read off the event loop.

    Raises:
        SetupFailure: the file is not a regular file, cannot be read in time, or is no object.
    """
    home = user_config_home(environ)
    path = home / MUSE_DIR / SETTINGS_FILE
    try:
        document = await off_loop(partial(_read_settings, path), SETTINGS_TIMEOUT)
    except TimeoutError:
        raise _refused(
            f"your Muse settings file {path} could not be read within {SETTINGS_TIMEOUT:g}s "
            "(its file system does not answer)."
        ) from None
    return UserSettings(home, path, document)


def _settings(user: dict[str, Any], servers: Sequence[McpServerSpec], path: Path) -> bytes:
    user = interactive(user) or user
    if not servers:
        return json.dumps(user, indent=2).encode()
    config = session_config(servers)
    ours = (
        {}
        if config is None
        else config.model_dump(mode="json", by_alias=True, exclude_none=True)["mcpServers"]
    )
    merged: dict[str, Any] = {}
    for key in _SERVER_KEYS:
        theirs = user.pop(key, None)
        if theirs is None:
            continue
        if not isinstance(theirs, dict):
            raise _refused(f"the {key!r} of your Muse settings file {path} is not a JSON object.")
        merged.update(theirs)
    merged.update(ours)
    return json.dumps({**user, "mcpServers": merged}, indent=2).encode()


def _link_the_rest(source: Path, target: Path, skip: str) -> None:
    """Symlink every entry of ``source`` but ``skip`` into ``target``."""
    try:
        entries = sorted(os.listdir(source))
    except OSError:
        return  # no config home of the user's (or none readable): nothing to show through
    for name in entries:
        if name != skip:
            (target / name).symlink_to(source / name)


@dataclass(slots=True)
class _Making:
    """What the caller of an overlay's making and its worker thread agree on (``lock``-held)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    gave_up: bool = False
    """The caller stopped waiting: the worker removes what it made."""
    made: bool = False
    """The worker finished the overlay before its caller gave up."""


def _make(overlay: Path, user_home: Path, content: bytes, making: _Making) -> None:
    """Make ``overlay`` (see the module contract); blocking file work, run in a worker thread."""
    root = overlay.parent
    try:
        run_dir(root.parent.parent, root.name)
        _private_dir(overlay)
        _link_the_rest(user_home, overlay, MUSE_DIR)
        _private_dir(overlay / MUSE_DIR)
        _link_the_rest(user_home / MUSE_DIR, overlay / MUSE_DIR, SETTINGS_FILE)
        fd = os.open(
            overlay / MUSE_DIR / SETTINGS_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600
        )
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(content)
    except OSError:
        shutil.rmtree(overlay, ignore_errors=True)
        raise
    with making.lock:
        making.made = not making.gave_up
    if not making.made:
        shutil.rmtree(overlay, ignore_errors=True)  # nobody else will: its caller is gone


@asynccontextmanager
async def settings_overlay(
    root: Path,
    servers: Sequence[McpServerSpec],
    user: UserSettings,
    environ: Mapping[str, str],
) -> AsyncIterator[Mapping[str, str]]:
    """A private config home carrying ``servers`` (if any) for one host, from the ``user``'s
    settings (see the module contract). Its file work runs in a worker thread, within
    ``SETTINGS_TIMEOUT`` seconds to make it and as much to remove it.

    Raises:
        SetupFailure: the overlay could not be made in time; nothing of it is left behind.
    """
    content = _settings(dict(user.document), servers, user.path)
    overlay = root / f"{os.getpid()}-{secrets.token_hex(8)}"
    making = _Making()
    try:
        await off_loop(partial(_make, overlay, user.home, content, making), SETTINGS_TIMEOUT)
    except BaseException as error:
        with making.lock:  # held by the worker only to read this flag: never for long
            making.gave_up = True  # from here on the worker removes whatever it makes
        if making.made and isinstance(error, TimeoutError):
            pass  # the worker finished as time ran out: the overlay is there
        elif making.made:
            await _remove(overlay)  # made just as the caller was cancelled
            raise
        elif isinstance(error, TimeoutError):  # an OSError too: looked at first
            raise _refused(
                f"its private settings file could not be written under {root} within "
                f"{SETTINGS_TIMEOUT:g}s (its file system does not answer; check muse-acp's "
                "data directory).",
                servers=bool(servers),
            ) from None
        elif isinstance(error, OSError):
            raise _refused(
                f"its private settings file could not be written under {root} "
                f"({error.strerror or error}).",
                servers=bool(servers),
            ) from None
        else:
            raise
    logger.debug(
        "settings overlay %s carries MCP servers %s%s",
        overlay.name,
        [s.name for s in servers],
        " and an interactive permission profile" if interactive(user.document) else "",
    )
    try:
        yield {**environ, CONFIG_HOME_ENV: str(overlay)}
    finally:
        await _remove(overlay)


async def _remove(overlay: Path) -> None:
    """Remove ``overlay`` off the event loop. Shielded: its host is gone, and its secrets must go
    even when the agent is stopping; bounded, so a file system that stopped answering never
    holds the stop up."""
    with anyio.CancelScope(shield=True):
        try:
            await off_loop(partial(shutil.rmtree, overlay, ignore_errors=True), SETTINGS_TIMEOUT)
        except TimeoutError:
            logger.warning(
                "the settings overlay %s could not be removed within %gs; "
                "the next start of muse-acp removes it",
                overlay,
                SETTINGS_TIMEOUT,
            )


def sweep(root: Path) -> int:
    """Remove the overlays of muse-acp processes that no longer run; return how many.
    Blocking file work: run it off the event loop."""
    removed = sweep_ended(root)
    if removed:
        logger.info("removed %d settings overlays left by muse-acp processes that ended", removed)
    return removed
