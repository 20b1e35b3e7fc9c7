"""What an editing tool is about to change: its file's absolute path and its text before.

Contract: ``read_before`` (and ``capture_before``, which reads for a ``BeforeKeeper`` that asks)
is the only I/O here; everything else is pure. The editing tools are ``write_file`` and
``edit_file`` (``EDITING_TOOLS``); ``absolute_path`` resolves a call's ``path`` against the
workspace lexically. ``read_before`` never reads outside the workspace (links resolved), reads
only regular files, at most ``FILE_TEXT_LIMIT_BYTES``, in a worker thread within
``READ_BUDGET`` seconds; a missing file is recorded as missing, and anything else it cannot show
becomes a short note of our own. ``change_content`` is the card's view of the change: a diff of
the whole file before and after, or a note saying why there is none.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol

import anyio

from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire import acp

__all__ = [
    "EDITING_TOOLS",
    "FILE_TEXT_LIMIT_BYTES",
    "NOT_READ_NOTE",
    "READ_BUDGET",
    "BeforeKeeper",
    "FileBefore",
    "absolute_path",
    "capture_before",
    "change_content",
    "edit_path",
    "read_before",
]

FILE_TEXT_LIMIT_BYTES: Final = 1024 * 1024
"""Largest file read for a diff."""
READ_BUDGET: Final = 2.0
"""Seconds a read may take before the card gives up on showing a diff."""
EDITING_TOOLS: Final = frozenset({"write_file", "edit_file"})

NOT_READ_NOTE: Final = "[muse-acp did not read this file before the change, so no diff is shown.]"
_OUTSIDE_NOTE: Final = (
    "[This file is outside the session's workspace; muse-acp does not read files there, so no "
    "diff is shown.]"
)
_LARGE_NOTE: Final = (
    f"[The file held more than {FILE_TEXT_LIMIT_BYTES} bytes before the change; muse-acp shows "
    "no diff for files that large.]"
)
_BINARY_NOTE: Final = "[The file did not hold UTF-8 text before the change, so no diff is shown.]"
_SLOW_NOTE: Final = "[Reading the file before the change took too long, so no diff is shown.]"
_ABSENT_NOTE: Final = "[The file did not exist before this edit, so no diff is shown.]"
_NOT_FOUND_NOTE: Final = (
    "[The text this edit replaces was not in the file when muse-acp read it before the change, "
    "so no diff is shown.]"
)
_REASON_LIMIT: Final = 80


@dataclass(frozen=True, slots=True)
class FileBefore:
    """What a file held before an editing tool ran, as far as muse-acp could tell."""

    path: str
    """The file's absolute path."""
    text: str | None = None
    """Its whole text; None when it did not exist or was not read (then ``note`` says why)."""
    note: str | None = None
    """Why the text is unknown, in our own words; None when it is known or the file was absent."""

    @property
    def absent(self) -> bool:
        """The file did not exist."""
        return self.text is None and self.note is None


def absolute_path(cwd: str | None, path: str) -> str:
    """``path`` made absolute against the workspace ``cwd`` (unchanged when there is none)."""
    if cwd is None and not os.path.isabs(path):
        return path
    return os.path.normpath(os.path.join(cwd or "", path))


def edit_path(tool: str, fields: Mapping[str, JsonValue]) -> str | None:
    """The ``path`` argument of an editing tool's call, or None for any other call."""
    path = fields.get("path")
    return path if tool in EDITING_TOOLS and isinstance(path, str) and path.strip() else None


async def read_before(cwd: str, path: str) -> FileBefore:
    """What the file at ``path`` (relative to the workspace ``cwd``) holds now."""
    target = absolute_path(cwd, path)
    if not _within(target, absolute_path(None, cwd)):
        return FileBefore(target, note=_OUTSIDE_NOTE)
    with anyio.move_on_after(READ_BUDGET):
        return await anyio.to_thread.run_sync(_read, target, cwd, abandon_on_cancel=True)
    return FileBefore(target, note=_SLOW_NOTE)


class BeforeKeeper(Protocol):
    """Keeps what files held before tools ran (``card_states.TurnCards`` is one)."""

    @property
    def cwd(self) -> str | None: ...

    def wants_before(self, call_id: str, tool: str, args: str) -> str | None:
        """The path to read for tool call ``call_id`` now, or None."""
        ...

    def keep_before(self, call_id: str, before: FileBefore) -> None: ...


async def capture_before(keeper: BeforeKeeper, call_id: str, tool: str, args: str) -> None:
    """Read the file tool call ``call_id`` is about to change, when ``keeper`` wants it."""
    path = keeper.wants_before(call_id, tool, args)
    if path is not None and keeper.cwd is not None:
        keeper.keep_before(call_id, await read_before(keeper.cwd, path))


def change_content(
    tool: str, fields: Mapping[str, JsonValue], before: FileBefore | None
) -> tuple[acp.DiffToolCallContent | None, str | None]:
    """The diff an editing tool's card shows, or the note saying why there is none."""
    path = edit_path(tool, fields)
    content, find, replace = fields.get("content"), fields.get("find"), fields.get("replace")
    if tool == "write_file":
        shaped = isinstance(content, str)
    else:
        shaped = isinstance(find, str) and isinstance(replace, str)
    if path is None or not shaped:
        return None, None
    if before is None:
        return None, NOT_READ_NOTE
    if before.note is not None:
        return None, before.note
    old = before.text
    if isinstance(content, str) and tool == "write_file":
        new = content
    elif isinstance(find, str) and isinstance(replace, str):
        if old is None:
            return None, _ABSENT_NOTE
        count = old.count(find) if find else 0
        if count != 1:
            return None, _NOT_FOUND_NOTE if count == 0 else _ambiguous_note(count)
        new = old.replace(find, replace, 1)
    else:  # pragma: no cover - ruled out by the shape check above
        return None, None
    return acp.DiffToolCallContent(type="diff", path=before.path, old_text=old, new_text=new), None


def _ambiguous_note(count: int) -> str:
    return (
        f"[The text this edit replaces occurs {count} times in the file; muse-acp cannot tell "
        "which one the tool changes, so no diff is shown.]"
    )


def _within(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # one absolute and one relative path: not comparable, so not inside
        return False


def _read(path: str, cwd: str) -> FileBefore:
    """Read ``path`` for ``read_before`` (in a worker thread)."""
    if not _within(os.path.realpath(path), os.path.realpath(cwd)):
        return FileBefore(path, note=_OUTSIDE_NOTE)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return FileBefore(path)
    except OSError as error:
        return FileBefore(path, note=_unreadable(error))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return FileBefore(path, note=_unreadable(None))
        data = _read_fd(fd)
    except OSError as error:
        return FileBefore(path, note=_unreadable(error))
    finally:
        os.close(fd)
    if len(data) > FILE_TEXT_LIMIT_BYTES:
        return FileBefore(path, note=_LARGE_NOTE)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return FileBefore(path, note=_BINARY_NOTE)
    if "\x00" in text:
        return FileBefore(path, note=_BINARY_NOTE)
    return FileBefore(path, text=text)


def _read_fd(fd: int) -> bytes:
    """At most one byte more than ``FILE_TEXT_LIMIT_BYTES`` from ``fd``."""
    chunks: list[bytes] = []
    left = FILE_TEXT_LIMIT_BYTES + 1
    while left > 0:
        chunk = os.read(fd, left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _unreadable(error: OSError | None) -> str:
    why = "it is not a regular file" if error is None else (error.strerror or type(error).__name__)
    return (
        f"[muse-acp could not read the file before the change ({why[:_REASON_LIMIT]}), so no "
        "diff is shown.]"
    )
