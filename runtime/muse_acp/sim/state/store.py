"""Durable session state under the state directory, shared by every muse-sim process.

Contract: a session ``<id>`` lives in ``sessions/<id>/``: ``meta.json`` (its ``SessionMeta``,
replaced atomically), ``events.jsonl`` (its durable view events, append-only; line ``n`` is the
event at cursor ``v:<id>:<n>``, and an unfinished last line is ignored, then cut by the next
holder), ``lease.lock`` (an exclusive ``flock`` held by the process that started or resumed it,
freed by the OS on a crash) and ``outputs/`` (stored tool output). Only the lease holder writes
a session; anyone may read it. Session ids are checked to be UUIDs before they become paths.
``all_metas`` caches each decoded meta while the file's identity, time and size stay the same.
An ephemeral store (``--no-session-log``) keeps the layout in a private temporary directory.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from muse_acp.sim.state.ids import is_uuid

__all__ = ["EventLog", "Lease", "OutputInfo", "SessionMeta", "Store"]

META_FILE: Final = "meta.json"
LOG_FILE: Final = "events.jsonl"
LOCK_FILE: Final = "lease.lock"
OUTPUTS_DIR: Final = "outputs"


@dataclass(frozen=True, slots=True)
class SessionMeta:
    """What a session is, apart from its events."""

    session_id: str
    created_at: str
    updated_at: str
    workspace_root: str | None
    provider_id: str | None
    model_id: str | None
    approval_mode: str
    approval_source: str = "startup"
    approval_command_id: str | None = None
    turn_count: int = 0
    forked_from: dict[str, Any] | None = None
    name: str | None = None
    first_user_prompt: str | None = None
    title: str | None = None
    """The title the model gave the session (``sim:name``); else the first prompt is shown."""
    reasoning_effort: str | None = None
    active_turn_id: str | None = None
    """The turn in progress, as last recorded by the lease holder (for list rows)."""
    permission_profile: str | None = None
    """The permission profile the session was created under (None: none was named)."""
    parent_session_id: str | None = None
    """The session whose subagent this session is (``subagent_sessions``); None for a root."""


@dataclass(frozen=True, slots=True)
class OutputInfo:
    """The description stored next to a tool's output bytes."""

    ref_id: str
    item_id: str
    media_type: str
    availability: str
    byte_len: int


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _replace_file(target: Path, text: str) -> None:
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    staging.write_text(text, encoding="utf-8")
    os.replace(staging, target)


class Lease:
    """An exclusive hold on a session, released when the process ends (or by ``release``)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _try_lock(path: Path) -> Lease | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if sys.platform == "win32":
            import msvcrt

            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return Lease(fd)


class EventLog:
    """The append-only durable event log of one session."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def lines(self) -> list[bytes]:
        """Every complete event line, oldest first (an unfinished last line is left out)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        return data[:end].split(b"\n") if end >= 0 else []

    def open_for_append(self) -> None:
        """Start appending; cuts off an unfinished last line a crashed holder left behind."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        size = os.fstat(fd).st_size
        if size:
            data = self.path.read_bytes()
            complete = data.rfind(b"\n") + 1
            if complete != len(data):
                os.ftruncate(fd, complete)
        self._fd = fd

    def append(self, line: bytes) -> None:
        if self._fd is None:
            raise RuntimeError("the event log is not open for appending")
        _write_all(self._fd, line + b"\n")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class Store:
    """The session directories under a state directory (see the module contract)."""

    def __init__(self, home: Path, *, ephemeral: bool = False) -> None:
        self.ephemeral = ephemeral
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        if ephemeral:
            self._scratch = tempfile.TemporaryDirectory(prefix="muse-sim-")
            root = Path(self._scratch.name)
        else:
            root = home
        self.sessions = root / "sessions"
        self._metas: dict[str, tuple[tuple[int, int, int], SessionMeta]] = {}
        """Decoded metas by session id, with the (inode, mtime, size) they were read at."""

    def close(self) -> None:
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    def session_dir(self, session_id: str) -> Path:
        if not is_uuid(session_id):
            raise ValueError("session ids are UUIDs")
        return self.sessions / session_id

    def exists(self, session_id: str) -> bool:
        return is_uuid(session_id) and (self.session_dir(session_id) / META_FILE).is_file()

    def create(self, meta: SessionMeta) -> Lease | None:
        """Make the session's directory and take its lease (None if someone holds it)."""
        folder = self.session_dir(meta.session_id)
        (folder / OUTPUTS_DIR).mkdir(parents=True, exist_ok=True)
        lease = _try_lock(folder / LOCK_FILE)
        if lease is not None:
            self.write_meta(meta)
        return lease

    def delete(self, session_id: str) -> None:
        """Remove a session's directory; the caller holds its lease (and releases it after)."""
        shutil.rmtree(self.session_dir(session_id))

    def acquire(self, session_id: str) -> Lease | None:
        return _try_lock(self.session_dir(session_id) / LOCK_FILE)

    def read_meta(self, session_id: str) -> SessionMeta | None:
        if not is_uuid(session_id):
            return None
        try:
            raw = (self.session_dir(session_id) / META_FILE).read_text(encoding="utf-8")
            return SessionMeta(**json.loads(raw))
        except (OSError, ValueError, TypeError):
            return None

    def write_meta(self, meta: SessionMeta) -> None:
        _replace_file(self.session_dir(meta.session_id) / META_FILE, json.dumps(asdict(meta)))

    def all_metas(self) -> Iterator[SessionMeta]:
        try:
            names = os.listdir(self.sessions)
        except FileNotFoundError:
            return
        known, self._metas = self._metas, {}
        for name in names:
            try:
                info = os.stat(os.path.join(self.sessions, name, META_FILE))
            except OSError:
                continue
            identity = (info.st_ino, info.st_mtime_ns, info.st_size)
            cached = known.get(name)
            meta = cached[1] if cached is not None and cached[0] == identity else None
            if meta is None:
                meta = self.read_meta(name)
            if meta is not None:
                self._metas[name] = (identity, meta)
                yield meta

    def log(self, session_id: str) -> EventLog:
        return EventLog(self.session_dir(session_id) / LOG_FILE)

    def output_path(self, session_id: str, ref_id: str) -> Path:
        return self.session_dir(session_id) / OUTPUTS_DIR / f"{ref_id}.out"

    def write_output_info(self, session_id: str, info: OutputInfo) -> None:
        target = self.session_dir(session_id) / OUTPUTS_DIR / f"{info.ref_id}.json"
        _replace_file(target, json.dumps(asdict(info)))

    def read_output_info(self, session_id: str, ref_id: str) -> OutputInfo | None:
        if not is_uuid(session_id) or not is_uuid(ref_id):
            return None
        target = self.session_dir(session_id) / OUTPUTS_DIR / f"{ref_id}.json"
        try:
            return OutputInfo(**json.loads(target.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None
