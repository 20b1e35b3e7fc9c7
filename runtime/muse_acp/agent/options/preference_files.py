"""The file work behind the preference store: reading a session's file without ever blocking on
it, rewriting it atomically and privately, and the lock that serialises its rewrites.

Contract (blocking; the store runs it in a worker thread): ``read_document`` opens without
blocking and accepts only a regular file holding a JSON object within ``MAX_FILE_BYTES``;
``write_document`` replaces the file atomically (a private temporary file, ``fsync``, rename);
``session_lock`` holds an exclusive ``flock`` on ``<session id>.lock`` for one read-modify-write,
waiting at most ``LOCK_WAIT`` seconds (less than ``IO_TIMEOUT``), and says whether the lock file
it first waited on was removed meanwhile (the session was deleted). A ``WriteClaim`` the caller
abandoned stops ``write_document`` before its rename. Readers take no lock. ``remove_document``
removes the file and its lock file. Without ``fcntl`` rewrites are unlocked. Failures are
``RpcError`` ``INTERNAL_ERROR`` naming the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from muse_acp.files import NotRegularFile, read_regular
from muse_acp.rpc.decoding import RefusedFrame, decode_frame
from muse_acp.rpc.errors import INTERNAL_ERROR, PARSE_ERROR, RpcError

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # pragma: no cover - muse-acp supports POSIX systems only
    fcntl = None

__all__ = [
    "LOCK_WAIT",
    "MAX_FILE_BYTES",
    "WriteClaim",
    "read_document",
    "remove_document",
    "session_lock",
    "unusable",
    "write_document",
]

MAX_FILE_BYTES: Final = 1024 * 1024
"""Largest preference file read; anything bigger is reported rather than loaded."""
LOCK_WAIT: Final = 3.0
"""Seconds a rewrite waits for another process's rewrite of the same session to finish."""

# flock has no timed wait, so a busy lock is retried, backing off from one millisecond: a
# rewrite holds it for one small write and its fsync.
_FIRST_RETRY: Final = 0.001
_LAST_RETRY: Final = 0.05


def unusable(path: Path, reason: str) -> RpcError:
    """The error for a preference file that cannot be used (it is never overwritten)."""
    return RpcError(
        INTERNAL_ERROR,
        f"the session preference file {path} is unusable: {reason}. Fix the file or remove it "
        "(removing it forgets the session's title and settings)",
        {"path": str(path)},
    )


def read_document(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when there is no file.

    Raises:
        RpcError: ``INTERNAL_ERROR`` (``unusable``) for anything else.
    """
    try:
        raw = read_regular(path, MAX_FILE_BYTES)
    except NotRegularFile:
        raise unusable(path, "it cannot be read: it is not a regular file") from None
    except OSError as error:
        raise unusable(path, f"it cannot be read ({error.strerror or error})") from None
    if raw is None:
        return None
    if len(raw) > MAX_FILE_BYTES:
        raise unusable(path, f"it is larger than {MAX_FILE_BYTES} bytes")
    document = decode_frame(raw)
    if isinstance(document, RefusedFrame):
        if document.error.code == PARSE_ERROR:
            raise unusable(path, "it is not valid UTF-8 JSON")
        why = document.error.message.removeprefix("frame ")
        raise unusable(path, f"it is JSON muse-acp will not read (it {why})")
    if not isinstance(document, dict):
        raise unusable(path, "it does not hold a JSON object")
    return document


class WriteClaim:
    """Settles, once, between a caller that may give up on a write and the worker doing it
    whether the file is put in place: ``place`` (the worker, just before its rename) and
    ``abandon`` (the caller) each say whether the write lands."""

    def __init__(self) -> None:
        self._settled = threading.Lock()  # held for a flag's check only, never for file work
        self._placing = False
        self._abandoned = False

    def place(self) -> bool:
        """Whether the worker may rename its file into place (the caller has not given up)."""
        with self._settled:
            self._placing = not self._abandoned
            return self._placing

    def abandon(self) -> bool:
        """Give up on the write; whether it will not land (False: its rename had begun)."""
        with self._settled:
            self._abandoned = not self._placing
            return self._abandoned


@contextlib.contextmanager
def session_lock(path: Path) -> Iterator[bool]:
    """Hold the lock of the session whose file is ``path`` (see the module contract); the
    value is True when the lock file first waited on was removed meanwhile.

    Raises:
        RpcError: ``INTERNAL_ERROR`` when the lock file cannot be used or stays held
            ``LOCK_WAIT`` seconds.
    """
    if fcntl is None:
        yield False
        return
    lock = path.with_suffix(".lock")
    deadline = time.monotonic() + LOCK_WAIT
    renewed = False
    while True:
        fd = _open_lock(path, lock)
        try:
            _acquire(fcntl, fd, path, lock, deadline)
            if _still_at(lock, fd):
                yield renewed  # closing the descriptor releases the lock
                return
        finally:
            os.close(fd)
        renewed = True
        # The session was deleted while this process waited, and its lock file with it; a
        # lock on the removed file would exclude nobody, so the new one is locked instead.


def remove_document(path: Path) -> None:
    """Remove the session's file and its lock file (nothing to do when neither exists).

    Raises:
        OSError: when a file cannot be removed.
        RpcError: as ``session_lock``.
    """
    lock = path.with_suffix(".lock")
    if not os.path.lexists(path) and not os.path.lexists(lock):
        return
    # Under the lock, so a rewrite in progress elsewhere finishes first, and one waiting for
    # the lock starts again on a new lock file (see session_lock).
    with session_lock(path):
        for each in (path, lock):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(each)


def _open_lock(path: Path, lock: Path) -> int:
    # Non-blocking and never following a link, so a FIFO or a link planted there is refused.
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        _make_directories(lock.parent)
        fd = os.open(lock, flags, 0o600)
    except OSError as error:
        raise _unlockable(path, lock, f"it cannot be opened: {error.strerror or error}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _unlockable(path, lock, "it is not a regular file")
    return fd


def _acquire(locking: ModuleType, fd: int, path: Path, lock: Path, deadline: float) -> None:
    pause = _FIRST_RETRY
    while True:
        try:
            locking.flock(fd, locking.LOCK_EX | locking.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError as error:
            why = f"it cannot be locked: {error.strerror or error}"
            raise _unlockable(path, lock, why) from None
        left = deadline - time.monotonic()
        if left <= 0:
            raise RpcError(
                INTERNAL_ERROR,
                f"the session preference file {path} could not be changed: another muse-acp "
                f"process held its lock file {lock} for over {LOCK_WAIT:g} s; try again, and "
                "if it persists, look for a muse-acp process that hangs on that directory",
                {"path": str(path)},
            )
        time.sleep(min(pause, left))
        pause = min(pause * 2, _LAST_RETRY)


def _still_at(lock: Path, fd: int) -> bool:
    """Whether the locked file is still the one at the lock's path."""
    try:
        there = os.stat(lock, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)


def _unlockable(path: Path, lock: Path, reason: str) -> RpcError:
    return RpcError(
        INTERNAL_ERROR,
        f"the session preference file {path} could not be changed: its lock file {lock} is "
        f"unusable ({reason}); check that the directory is writable and remove the lock file "
        "if it is not a regular file",
        {"path": str(path)},
    )


def write_document(path: Path, document: dict[str, Any], claim: WriteClaim | None = None) -> None:
    """Replace ``path`` with ``document`` atomically (see the module contract), unless the
    caller abandoned ``claim`` first: then the temporary file is removed and nothing changes.

    Raises:
        RpcError: ``INTERNAL_ERROR`` naming the file when the write fails or was abandoned.
    """
    data = (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    try:
        _make_directories(path.parent)
        # mkstemp creates the file with mode 0600, so it is never readable by others.
        fd, staging = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if claim is not None and not claim.place():
                raise _Abandoned
            os.replace(staging, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staging)
            raise
        _sync_directory(path.parent)
    except _Abandoned:
        raise RpcError(
            INTERNAL_ERROR,
            f"the session preference file {path} was left unchanged: saving it took too long",
            {"path": str(path)},
        ) from None
    except OSError as error:
        raise RpcError(
            INTERNAL_ERROR,
            f"could not save the session preferences to {path}: "
            f"{error.strerror or error}; check that the directory is writable",
            {"path": str(path)},
        ) from None


class _Abandoned(Exception):
    """The caller gave up on the write before its rename."""


def _make_directories(directory: Path) -> None:
    """Create the data directory and its sessions directory, 0700 (an existing one keeps the
    mode its owner set).

    Raises:
        OSError: when a directory cannot be created.
    """
    directory.parent.parent.mkdir(parents=True, exist_ok=True)
    for each in (directory.parent, directory):
        with contextlib.suppress(FileExistsError):
            each.mkdir(mode=0o700)


def _sync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not every platform can open a directory for this.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
