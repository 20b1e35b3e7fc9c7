"""What the adapter remembers about a session on its own: the user's title, the session's
settings, and where a session it created lives before Muse has it.

Contract: each session has at most one JSON file, ``<data_dir>/sessions/<session_id>.json``
(its members in docs/architecture.md); Muse's own session files are never touched. The agent
goes only through ``read``, ``read_many``, ``write_user_title``, ``write_settings`` and
``write_created``, which do the file work in a worker thread within ``IO_TIMEOUT`` seconds; a
write given up on is not made later, nor one that waited while the session was deleted.

Errors: ``read`` and ``read_many`` never fail: an unusable file comes back as
``SessionPreferences.problem``, a sentence for the user. A write to a file that cannot be read or
used raises ``RpcError`` ``INTERNAL_ERROR`` naming it; a bad file is never reset or overwritten.
Several processes may share a data directory: a write changes only what its process changed
(``SettingsChange``) under the session's lock (``preference_files``) and keeps members it does
not know.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TypeVar

import anyio

from muse_acp.agent.options.preference_files import (
    MAX_FILE_BYTES,
    WriteClaim,
    read_document,
    session_lock,
    unusable,
    write_document,
)
from muse_acp.agent.options.titles import title_problem
from muse_acp.rpc.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError

__all__ = [
    "IO_TIMEOUT",
    "MAX_FILE_BYTES",
    "SCHEMA_VERSION",
    "PreferenceStore",
    "SessionPreferences",
    "SettingsChange",
    "StoredSettings",
]

_T = TypeVar("_T")
_Edit = Callable[[dict[str, Any], "SessionPreferences"], None]
"""Changes a session's document in place, given what it held."""

IO_TIMEOUT: Final = 5.0
"""Seconds the preference files of one request may take to read or write."""

SCHEMA_VERSION: Final = 1
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


# Each setting a client changes as one, by the fields that hold it (a provider without its
# model would be malformed).
_FIELDS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {"mode": ("mode_id",), "model": ("model_id", "provider_id"), "effort": ("effort",)}
)


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """The settings one process changed: ``members`` (of "mode", "model", "effort") and the
    safety options in ``safety`` take their values from ``after``; every other stored value
    stays as stored, so no process writes back a value it did not change."""

    after: StoredSettings
    members: frozenset[str] = frozenset()
    safety: frozenset[str] = frozenset()
    """Safety option ids; one missing from ``after`` goes back to Muse's default."""

    @classmethod
    def between(cls, before: StoredSettings, after: StoredSettings) -> SettingsChange:
        """What changed from ``before`` to ``after``."""
        members = frozenset(
            name
            for name, fields in _FIELDS.items()
            if any(getattr(before, field) != getattr(after, field) for field in fields)
        )
        old, new = dict(before.safety), dict(after.safety)
        return cls(after, members, frozenset(k for k in old | new if old.get(k) != new.get(k)))

    def applied_to(self, stored: StoredSettings | None) -> StoredSettings:
        """``stored`` with this change; ``after`` whole when nothing is stored yet (no other
        process has stored settings then)."""
        if stored is None:
            return self.after
        changed = {field: getattr(self.after, field) for m in self.members for field in _FIELDS[m]}
        safety, mine = dict(stored.safety), dict(self.after.safety)
        for option in self.safety:
            if option in mine:
                safety[option] = mine[option]
            else:
                safety.pop(option, None)
        return replace(stored, **changed, safety=tuple(sorted(safety.items())))


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
        document = read_document(path)
        if document is None:
            return SessionPreferences()
        return _preferences(path, document)

    def save_user_title(
        self,
        session_id: str,
        title: str,
        *,
        now: datetime | None = None,
        claim: WriteClaim | None = None,
    ) -> SessionPreferences:
        """Store ``title`` (already checked) as the session's user title, stamped ``now``.

        Raises:
            RpcError: ``INVALID_PARAMS`` for an unusable id, ``INTERNAL_ERROR`` when the
                existing file is unusable (it is left as it is), the lock stays held or the
                write fails, or the session was deleted while it waited for the lock; nothing
                is written after ``claim`` was abandoned.
        """
        title_member = {"text": title, "updatedAt": _timestamp(now)}
        return self._update(
            session_id, lambda document, _: document.update(userTitle=title_member), claim
        )

    def save_settings(
        self, session_id: str, change: SettingsChange, *, claim: WriteClaim | None = None
    ) -> SessionPreferences:
        """Store the members ``change`` names over those stored, keeping all the others.

        Raises:
            RpcError: as ``save_user_title``.
        """

        def edit(document: dict[str, Any], kept: SessionPreferences) -> None:
            member = document.get("settings", {})  # a newer adapter's own settings survive
            document["settings"] = {**member, **change.applied_to(kept.settings).member()}

        return self._update(session_id, edit, claim)

    def save_created(
        self, session_id: str, cwd: str, *, claim: WriteClaim | None = None
    ) -> SessionPreferences:
        """Record that the session was created in ``cwd`` (fails as ``save_user_title``)."""
        created = {"cwd": cwd, "at": _timestamp(None)}
        return self._update(
            session_id, lambda document, _: document.update(created=created), claim, creates=True
        )

    def _update(
        self, session_id: str, edit: _Edit, claim: WriteClaim | None, *, creates: bool = False
    ) -> SessionPreferences:
        """Read, ``edit`` and rewrite the session's file under its lock, so what another
        process wrote in between is never lost; the result is the file as written. Only a
        write that ``creates`` the session makes a file its deletion removed meanwhile."""
        path = self.path_for(session_id)
        with session_lock(path) as renewed:
            existing = read_document(path)
            if existing is None and renewed and not creates:
                raise RpcError(
                    INTERNAL_ERROR,
                    f"nothing was saved to {path}: the session was deleted meanwhile",
                    {"path": str(path)},
                )
            kept = SessionPreferences() if existing is None else _preferences(path, existing)
            document = existing or {}
            document["schemaVersion"] = SCHEMA_VERSION
            edit(document, kept)
            written = _preferences(path, document)
            write_document(path, document, claim)
        return written

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

    async def write_settings(self, session_id: str, change: SettingsChange) -> StoredSettings:
        """``save_settings`` off the event loop (fails as ``write_user_title``); the settings
        now stored, other processes' members included."""
        save = partial(self.save_settings, session_id, change)
        written = (await self._write_off_loop("the session settings", save)).settings
        assert written is not None  # save_settings always stores some
        return written

    async def write_created(self, session_id: str, cwd: str) -> None:
        """``save_created`` off the event loop (fails as ``write_user_title``)."""
        save = partial(self.save_created, session_id, cwd)
        await self._write_off_loop("the new session", save)

    async def _write_off_loop(
        self, what: str, work: Callable[..., SessionPreferences]
    ) -> SessionPreferences:
        """``work(claim=...)`` off the loop; given up on in time, it is not made later."""
        claim = WriteClaim()
        try:
            return await _off_loop(partial(work, claim=claim))
        except TimeoutError:
            # Past this the worker removes its temporary file instead of renaming it; only a
            # rename already under way may still land.
            outcome = "nothing was saved" if claim.abandon() else "it may still be saved"
            raise RpcError(
                INTERNAL_ERROR,
                f"saving {what} did not finish within {IO_TIMEOUT:g} s ({outcome}); check "
                f"that {self.directory} is on a responsive file system",
            ) from None

    def _load_or_problem(self, session_id: str) -> SessionPreferences:
        try:
            return self.load(session_id)
        except RpcError as error:
            return SessionPreferences(problem=error.message)


def _preferences(path: Path, document: dict[str, Any]) -> SessionPreferences:
    """Read the members this version understands, reporting any that are malformed."""
    version = document.get("schemaVersion")
    # bool is an int subclass, and true must not pass for version 1.
    if type(version) is not int or version != SCHEMA_VERSION:
        raise unusable(path, f"its schemaVersion is {json.dumps(version)}, not {SCHEMA_VERSION}")
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
        raise unusable(path, "its userTitle is not an object")
    text, updated_at = entry.get("text"), entry.get("updatedAt")
    if not isinstance(text, str):
        raise unusable(path, "its userTitle.text is not a string")
    problem = title_problem(text) if text == text.strip() else "it has surrounding blanks"
    if problem is not None:
        raise unusable(path, f"its userTitle.text cannot be a title ({problem})")
    if updated_at is not None and not isinstance(updated_at, str):
        raise unusable(path, "its userTitle.updatedAt is not a string")
    return text, updated_at


_SETTING_LIMIT: Final = 256


def _settings(path: Path, document: dict[str, Any]) -> StoredSettings | None:
    if "settings" not in document:
        return None
    entry = document["settings"]
    if not isinstance(entry, dict):
        raise unusable(path, "its settings member is not an object")
    values: dict[str, str | None] = {}
    for name in ("modeId", "modelId", "providerId", "effort"):
        value = entry.get(name)
        short = isinstance(value, str) and 0 < len(value) <= _SETTING_LIMIT
        if value is not None and not short:
            raise unusable(path, f"its settings.{name} is not a short string")
        values[name] = value
    mode_id = values["modeId"]
    if mode_id is None:
        raise unusable(path, "its settings.modeId is missing")
    if values["providerId"] is not None and values["modelId"] is None:
        raise unusable(path, "its settings.providerId is given without a modelId")
    safety = entry.get("safety", {})
    pairs = [(k, v) for k, v in (safety.items() if isinstance(safety, dict) else [(0, 0)])]
    safe = tuple(sorted((k, v) for k, v in pairs if isinstance(k, str) and isinstance(v, str)))
    if len(safe) != len(pairs) or any(len(v) > 64 for _, v in safe):
        raise unusable(path, "its settings.safety is not an object of short strings")
    return StoredSettings(mode_id, values["modelId"], values["providerId"], values["effort"], safe)


def _created(path: Path, document: dict[str, Any]) -> str | None:
    if "created" not in document:
        return None
    entry = document["created"]
    cwd = entry.get("cwd") if isinstance(entry, dict) else None
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise unusable(path, "its created.cwd is not an absolute path")
    return cwd


async def _off_loop(work: Callable[[], _T]) -> _T:
    """Run ``work`` in a worker thread, giving up on it after ``IO_TIMEOUT`` (``TimeoutError``);
    the thread of a file system that never answers is left behind, never waited for."""
    with anyio.fail_after(IO_TIMEOUT):
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
