"""What muse-acp keeps of a session it deleted: nothing of its own; and the tombstones earlier
releases wrote for sessions they hid rather than deleted.

Contract: ``forget(session_id)`` removes the session's preference and lock files. A session
with a tombstone ``<data_dir>/deleted/<session_id>.json`` (earlier releases hid sessions a Muse
without ``session/delete`` kept) is never listed (``hidden``) and never loaded, resumed, forked
or deleted again (``refuse``: ``deleted_error``, -32002): a user who deleted it does not see it
come back. File work runs in a worker thread within ``preferences.IO_TIMEOUT``.

Errors: ``INTERNAL_ERROR`` naming the directory when it cannot be read (a deleted session must
not reappear silently), or the file that cannot be written or removed.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final, TypeVar

import anyio

from muse_acp.agent.options.preference_files import remove_document
from muse_acp.agent.options.preferences import IO_TIMEOUT, PreferenceStore
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

    async def forget(self, session_id: str) -> None:
        """Remove the session's preference file.

        Raises:
            RpcError: ``INVALID_PARAMS`` for an unusable id, ``INTERNAL_ERROR`` when a file
                cannot be written or removed in time.
        """
        preferences = self._preferences.path_for(session_id)

        def work() -> None:
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
