"""What the adapter remembers about a session on its own: the user's title, the session's
settings, and where a session it created lives before Muse has it.

Contract: each session has at most one JSON file, ``<data_dir>/sessions/<session_id>.json``::

    {"schemaVersion": 1,
     "userTitle": {"text": "...", "updatedAt": "<RFC 3339 UTC>"},
     "settings": {"modeId": "...", "modelId": "..." | null, "providerId": "..." | null,
                  "effort": "..." | null, "safety": {"<option id>": "<value>", ...}},
     "created": {"cwd": "<absolute path>", "at": "<RFC 3339 UTC>"}}

Every member is optional. ``settings`` are what the client chose (mode, model, reasoning
effort, safety options), written whenever they change, so a restarted agent brings a session
back as it was left.
``created`` is written by ``session/new``: Muse learns of a session only at its first prompt, so
this record is what lets a session that was never prompted be loaded or resumed. The store checks
the shape of each member; whether a stored mode or model is still offered is the caller's
question.

A missing file means no preferences. A file that cannot be read, is not a regular file (a FIFO
or a device is never opened for a blocking read), is not JSON within the runtime's limits, has
another ``schemaVersion`` or a malformed member is reported as ``RpcError`` ``INTERNAL_ERROR``
naming the file and asking the user to fix or remove it; it is never reset behind their back,
and it is not overwritten either.

The agent reads and writes only through ``read``, ``read_many``, ``write_user_title``,
``write_settings`` and ``write_created``, which run the file work in a worker thread within
``IO_TIMEOUT`` seconds, so a hung file system never stalls the event loop. ``read`` and
``read_many`` never fail: an unusable file (or one that does not answer in time) comes back as
``SessionPreferences.problem``, a sentence for the user, so one bad file concerns its own
session only.

Rewrites keep every member this version does not know, so a newer adapter's additions survive.
Writes are atomic (a temporary file in the same directory,
flushed with ``fsync``, then ``os.replace``), and both the directory (0700) and the files
(0600) are created private to the user rather than restricted afterwards. The store refuses a
session id that is not a plain file name, even though callers already check ids, because the
id becomes part of a path. Muse's own session files are never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio

from muse_acp.agent.titles import title_problem
from muse_acp.rpc.decoding import RefusedFrame, decode_frame
from muse_acp.rpc.errors import INTERNAL_ERROR, INVALID_PARAMS, PARSE_ERROR, RpcError

__all__ = [
    "IO_TIMEOUT",
    "MAX_FILE_BYTES",
    "SCHEMA_VERSION",
    "PreferenceStore",
    "SessionPreferences",
    "StoredSettings",
]

_T = TypeVar("_T")

IO_TIMEOUT: Final = 5.0
"""Seconds the preference files of one request may take to read or write."""

SCHEMA_VERSION: Final = 1
MAX_FILE_BYTES: Final = 1024 * 1024
"""Largest preference file read; anything bigger is reported rather than loaded."""
SESSIONS_DIRECTORY: Final = "sessions"

# One path component only: a leading letter or digit rules out ".", ".." and hidden names
# (the store's own temporary files start with a dot).
_FILE_STEM: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True, slots=True)
class StoredSettings:
    """A session's settings as stored (checked for shape only)."""

    mode_id: str
    model_id: str | None = None
    provider_id: str | None = None
    effort: str | None = None
    safety: tuple[tuple[str, str], ...] = ()  # (safety option id, value) pairs

    def member(self) -> dict[str, Any]:
        names = ("modeId", "modelId", "providerId", "effort")
        values = (self.mode_id, self.model_id, self.provider_id, self.effort)
        return {**dict(zip(names, values, strict=True)), "safety": dict(self.safety)}


@dataclass(frozen=True, slots=True)
class SessionPreferences:
    """A session's stored preferences; None where nothing is stored."""

    user_title: str | None = None
    title_updated_at: str | None = None
    """When the user title was set (RFC 3339, UTC)."""
    settings: StoredSettings | None = None
    created_cwd: str | None = None
    """The workspace of a session ``session/new`` created here (Muse may not have it yet)."""
    problem: str | None = None
    """Why the session's file could not be used (its other members are then empty)."""


def _timestamp(now: datetime | None) -> str:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class PreferenceStore:
    """Per-session preference files under one data directory (see the module contract)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.directory = data_dir / SESSIONS_DIRECTORY

    def path_for(self, session_id: str) -> Path:
        """The file of ``session_id``.

        Raises:
            RpcError: ``INVALID_PARAMS`` when the id is not a plain file name.
        """
        if not _FILE_STEM.fullmatch(session_id):
            raise RpcError(
                INVALID_PARAMS,
                "this session id cannot name a preference file; use an id returned by "
                "session/new or session/list",
            )
        return self.directory / f"{session_id}.json"

    def load(self, session_id: str) -> SessionPreferences:
        """The session's preferences; empty when it has no file.

        Raises:
            RpcError: ``INVALID_PARAMS`` for an unusable id, ``INTERNAL_ERROR`` for a file that
                cannot be read or understood.
        """
        path = self.path_for(session_id)
        document = self._read(path)
        if document is None:
            return SessionPreferences()
        return _preferences(path, document)

    def save_user_title(
        self, session_id: str, title: str, *, now: datetime | None = None
    ) -> SessionPreferences:
        """Store ``title`` (already checked) as the session's user title, stamped ``now``.

        Raises:
            RpcError: ``INVALID_PARAMS`` for an unusable id, ``INTERNAL_ERROR`` when the
                existing file is unusable (it is left as it is) or the write fails.
        """
        return self.save_member(
            session_id, "userTitle", {"text": title, "updatedAt": _timestamp(now)}
        )

    def save_member(self, session_id: str, name: str, value: dict[str, Any]) -> SessionPreferences:
        """Store one member of the session's file, keeping every other member.

        Raises:
            RpcError: as ``save_user_title``.
        """
        path = self.path_for(session_id)
        existing = self._read(path)
        if existing is not None:
            _preferences(path, existing)
        document = existing or {}
        document["schemaVersion"] = SCHEMA_VERSION
        document[name] = value
        self._write(path, document)
        return _preferences(path, document)

    async def read(self, session_id: str) -> SessionPreferences:
        """The session's preferences, read off the event loop; a problem instead of an error."""
        return (await self.read_many([session_id]))[session_id]

    async def read_many(self, session_ids: Sequence[str]) -> dict[str, SessionPreferences]:
        """Each session's preferences (see ``read``), all read in one bounded worker call."""

        def load_all() -> dict[str, SessionPreferences]:
            return {session_id: self._load_or_problem(session_id) for session_id in session_ids}

        try:
            return await _off_loop(load_all)
        except TimeoutError:
            late = SessionPreferences(
                problem=f"its preference file did not answer within {IO_TIMEOUT:g} s"
            )
            return dict.fromkeys(session_ids, late)

    async def write_user_title(self, session_id: str, title: str) -> SessionPreferences:
        """``save_user_title`` off the event loop, within ``IO_TIMEOUT``.

        Raises:
            RpcError: as ``save_user_title``, or INTERNAL_ERROR when the write did not finish.
        """
        save = partial(self.save_user_title, session_id, title)
        return await self._write_off_loop("the session title", save)

    async def write_settings(self, session_id: str, settings: StoredSettings) -> None:
        """Store the session's settings (see ``write_user_title`` for the failures)."""
        save = partial(self.save_member, session_id, "settings", settings.member())
        await self._write_off_loop("the session settings", save)

    async def write_created(self, session_id: str, cwd: str) -> None:
        """Record that ``session/new`` made the session in ``cwd`` (fails as ``write_settings``)."""
        created = {"cwd": cwd, "at": _timestamp(None)}
        save = partial(self.save_member, session_id, "created", created)
        await self._write_off_loop("the new session", save)

    async def _write_off_loop(
        self, what: str, work: Callable[[], SessionPreferences]
    ) -> SessionPreferences:
        try:
            return await _off_loop(work)
        except TimeoutError:
            raise RpcError(
                INTERNAL_ERROR,
                f"saving {what} did not finish within {IO_TIMEOUT:g} s; check that "
                f"{self.directory} is on a responsive file system",
            ) from None

    def _load_or_problem(self, session_id: str) -> SessionPreferences:
        try:
            return self.load(session_id)
        except RpcError as error:
            return SessionPreferences(problem=error.message)

    def _read(self, path: Path) -> dict[str, Any] | None:
        try:
            # Non-blocking, so a FIFO planted at the path is refused instead of waited on.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise _unusable(path, f"it cannot be read ({error.strerror or error})") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _unusable(path, "it cannot be read: it is not a regular file")
            with os.fdopen(fd, "rb", closefd=False) as handle:
                raw = handle.read(MAX_FILE_BYTES + 1)
        except OSError as error:
            raise _unusable(path, f"it cannot be read ({error.strerror or error})") from None
        finally:
            os.close(fd)
        if len(raw) > MAX_FILE_BYTES:
            raise _unusable(path, f"it is larger than {MAX_FILE_BYTES} bytes")
        document = decode_frame(raw)
        if isinstance(document, RefusedFrame):
            if document.error.code == PARSE_ERROR:
                raise _unusable(path, "it is not valid UTF-8 JSON")
            why = document.error.message.removeprefix("frame ")
            raise _unusable(path, f"it is JSON muse-acp will not read (it {why})")
        if not isinstance(document, dict):
            raise _unusable(path, "it does not hold a JSON object")
        return document

    def _write(self, path: Path, document: dict[str, Any]) -> None:
        data = (json.dumps(document, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        try:
            self._make_directory()
            # mkstemp creates the file with mode 0600, so it is never readable by others.
            fd, staging = tempfile.mkstemp(
                prefix=f".{path.stem}.", suffix=".tmp", dir=self.directory
            )
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(staging, path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(staging)
                raise
            self._sync_directory()
        except OSError as error:
            raise RpcError(
                INTERNAL_ERROR,
                f"could not save the session preferences to {path}: "
                f"{error.strerror or error}; check that the directory is writable",
                {"path": str(path)},
            ) from None

    def _make_directory(self) -> None:
        # Only directories created here get 0700; an existing one keeps the mode its owner set.
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        for directory in (self.data_dir, self.directory):
            with contextlib.suppress(FileExistsError):
                directory.mkdir(mode=0o700)

    def _sync_directory(self) -> None:
        # Makes the rename itself durable; not every platform can open a directory for this.
        try:
            fd = os.open(self.directory, os.O_RDONLY)
        except OSError:
            return
        try:
            with contextlib.suppress(OSError):
                os.fsync(fd)
        finally:
            os.close(fd)


def _unusable(path: Path, reason: str) -> RpcError:
    return RpcError(
        INTERNAL_ERROR,
        f"the session preference file {path} is unusable: {reason}. Fix the file or remove it "
        "(removing it forgets the session's title and settings)",
        {"path": str(path)},
    )


def _preferences(path: Path, document: dict[str, Any]) -> SessionPreferences:
    """Read the members this version understands, reporting any that are malformed."""
    version = document.get("schemaVersion")
    # bool is an int subclass, and true must not pass for version 1.
    if type(version) is not int or version != SCHEMA_VERSION:
        raise _unusable(path, f"its schemaVersion is {json.dumps(version)}, not {SCHEMA_VERSION}")
    title, updated_at = _user_title(path, document)
    return SessionPreferences(
        user_title=title,
        title_updated_at=updated_at,
        settings=_settings(path, document),
        created_cwd=_created(path, document),
    )


def _user_title(path: Path, document: dict[str, Any]) -> tuple[str | None, str | None]:
    if "userTitle" not in document:
        return None, None
    entry = document["userTitle"]
    if not isinstance(entry, dict):
        raise _unusable(path, "its userTitle is not an object")
    text, updated_at = entry.get("text"), entry.get("updatedAt")
    if not isinstance(text, str):
        raise _unusable(path, "its userTitle.text is not a string")
    problem = title_problem(text) if text == text.strip() else "it has surrounding blanks"
    if problem is not None:
        raise _unusable(path, f"its userTitle.text cannot be a title ({problem})")
    if updated_at is not None and not isinstance(updated_at, str):
        raise _unusable(path, "its userTitle.updatedAt is not a string")
    return text, updated_at


_SETTING_LIMIT: Final = 256


def _settings(path: Path, document: dict[str, Any]) -> StoredSettings | None:
    if "settings" not in document:
        return None
    entry = document["settings"]
    if not isinstance(entry, dict):
        raise _unusable(path, "its settings member is not an object")
    values: dict[str, str | None] = {}
    for name in ("modeId", "modelId", "providerId", "effort"):
        value = entry.get(name)
        short = isinstance(value, str) and 0 < len(value) <= _SETTING_LIMIT
        if value is not None and not short:
            raise _unusable(path, f"its settings.{name} is not a short string")
        values[name] = value
    mode_id = values["modeId"]
    if mode_id is None:
        raise _unusable(path, "its settings.modeId is missing")
    if values["providerId"] is not None and values["modelId"] is None:
        raise _unusable(path, "its settings.providerId is given without a modelId")
    safety = entry.get("safety", {})
    pairs = [(k, v) for k, v in (safety.items() if isinstance(safety, dict) else [(0, 0)])]
    safe = tuple(sorted((k, v) for k, v in pairs if isinstance(k, str) and isinstance(v, str)))
    if len(safe) != len(pairs) or any(len(v) > 64 for _, v in safe):
        raise _unusable(path, "its settings.safety is not an object of short strings")
    return StoredSettings(mode_id, values["modelId"], values["providerId"], values["effort"], safe)


def _created(path: Path, document: dict[str, Any]) -> str | None:
    if "created" not in document:
        return None
    entry = document["created"]
    cwd = entry.get("cwd") if isinstance(entry, dict) else None
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise _unusable(path, "its created.cwd is not an absolute path")
    return cwd


async def _off_loop(work: Callable[[], _T]) -> _T:
    """Run ``work`` in a worker thread, giving up on it after ``IO_TIMEOUT`` (``TimeoutError``);
    the thread of a file system that never answers is left behind, never waited for."""
    with anyio.fail_after(IO_TIMEOUT):
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
