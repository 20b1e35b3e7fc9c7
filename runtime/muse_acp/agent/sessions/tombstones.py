"""What muse-acp keeps of a session it deleted: nothing of its own, and, where Muse kept the
session, a tombstone that hides it.

Contract: ``forget(session_id, hide=...)`` removes the session's preference and lock files and,
with ``hide`` (a Muse without a native ``session/delete`` keeps the session), first writes a
tombstone ``<data_dir>/deleted/<session_id>.json``, so a failure half way never shows a deleted
session again. A session with a tombstone is never listed (``hidden``) and never loaded,
resumed, forked or deleted again (``refuse``: ``deleted_error``, -32002). Files are made private
like preference files, in a worker thread within ``preferences.IO_TIMEOUT``.

Errors: ``INTERNAL_ERROR`` naming the directory when it cannot be read (a deleted session must
not reappear silently), or the file that cannot be written or removed.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, TypeVar

import anyio

from muse_acp.agent.options.preference_files import remove_document
from muse_acp.agent.options.preferences import IO_TIMEOUT, SCHEMA_VERSION, PreferenceStore
from muse_acp.agent.sessions.session import shown_id
from muse_acp.rpc import INTERNAL_ERROR, RESOURCE_NOT_FOUND, RpcError

__all__ = ["TOMBSTONE_DIRECTORY", "Tombstones", "deleted_error"]

_T = TypeVar("_T")

TOMBSTONE_DIRECTORY: Final = "deleted"
_SUFFIX: Final = ".json"


def deleted_error(session_id: str) -> RpcError:
    """The answer to a request that names a session muse-acp deleted."""
    return RpcError(
        RESOURCE_NOT_FOUND,
        f"session {shown_id(session_id)} was deleted; pick another one from session/list or "
        "start a new session",
        {"sessionId": shown_id(session_id), "deleted": True},
    )


class Tombstones:
    """The tombstones of deleted sessions under one data directory (see the module contract)."""

    def __init__(self, preferences: PreferenceStore) -> None:
        self._preferences = preferences
        self.directory = preferences.data_dir / TOMBSTONE_DIRECTORY

    def path_for(self, session_id: str) -> Path:
        """The tombstone of ``session_id``.

        Raises:
            RpcError: ``INVALID_PARAMS`` when the id is not a plain file name.
        """
        self._preferences.path_for(session_id)  # the same rule for ids as preference files
        return self.directory / f"{session_id}{_SUFFIX}"

    async def hidden(self, session_ids: Sequence[str]) -> frozenset[str]:
        """Those of ``session_ids`` that have a tombstone (one directory read for all).

        Raises:
            RpcError: ``INTERNAL_ERROR`` when the directory cannot be read in time.
        """

        def scan() -> frozenset[str]:
            try:
                names = set(os.listdir(self.directory))
            except FileNotFoundError:
                return frozenset()
            except OSError as error:
                raise self._unreadable(error.strerror or str(error)) from None
            return frozenset(s for s in session_ids if f"{s}{_SUFFIX}" in names)

        try:
            return await _off_loop(scan)
        except TimeoutError:
            raise self._unreadable(f"it did not answer within {IO_TIMEOUT:g} s") from None

    async def refuse(self, session_id: str) -> None:
        """Refuse a session that was deleted here (-32002).

        Raises:
            RpcError: ``RESOURCE_NOT_FOUND`` for a deleted session, else as ``hidden``.
        """
        if session_id in await self.hidden([session_id]):
            raise deleted_error(session_id)

    async def forget(self, session_id: str, *, hide: bool) -> None:
        """Remove the session's preference file, with ``hide`` after recording its tombstone.

        Raises:
            RpcError: ``INVALID_PARAMS`` for an unusable id, ``INTERNAL_ERROR`` when a file
                cannot be written or removed in time.
        """
        preferences = self._preferences.path_for(session_id)
        tombstone = self.path_for(session_id)

        def work() -> None:
            if hide:
                self._write(tombstone)
            try:
                remove_document(preferences)  # and its lock file, once no write is under way
            except OSError as error:
                raise _unwritable(
                    preferences,
                    f"removed ({error.strerror or error}); the session is deleted, remove that "
                    "file yourself (it held only its title and settings)",
                ) from None

        try:
            await _off_loop(work)
        except TimeoutError:
            raise RpcError(
                INTERNAL_ERROR,
                f"forgetting the deleted session did not finish within {IO_TIMEOUT:g} s; check "
                f"that {self._preferences.data_dir} is on a responsive file system",
            ) from None

    def _write(self, path: Path) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        data = json.dumps({"schemaVersion": SCHEMA_VERSION, "deletedAt": stamp}) + "\n"
        try:
            # Only directories created here get 0700; an existing one keeps its owner's mode.
            self._preferences.data_dir.parent.mkdir(parents=True, exist_ok=True)
            for directory in (self._preferences.data_dir, self.directory):
                with contextlib.suppress(FileExistsError):
                    directory.mkdir(mode=0o700)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(path, flags, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as error:
            raise _unwritable(
                path,
                f"written ({error.strerror or error}), so nothing was deleted; check that the "
                "directory is writable, then delete the session again",
            ) from None

    def _unreadable(self, reason: str) -> RpcError:
        return RpcError(
            INTERNAL_ERROR,
            f"muse-acp cannot read its record of deleted sessions in {self.directory} ({reason}); "
            "check that the directory is readable",
            {"path": str(self.directory)},
        )


def _unwritable(path: Path, what: str) -> RpcError:
    return RpcError(
        INTERNAL_ERROR, f"muse-acp's file {path} could not be {what}", {"path": str(path)}
    )


async def _off_loop(work: Callable[[], _T]) -> _T:
    """Run ``work`` in a worker thread, giving up on it after ``IO_TIMEOUT``."""
    with anyio.fail_after(IO_TIMEOUT):
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
