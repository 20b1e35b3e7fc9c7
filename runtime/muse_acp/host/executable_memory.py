"""What muse-acp remembers of one Muse executable between its runs: the probe's answer and the
model catalog its last host listed.

Contract (blocking: callers run it off the event loop, bounded): per executable path, one JSON
file per part (probe, catalog) under ``memory_dir(data_dir)``, a folder readable by its owner
only, each replaced atomically and written whole: a part never reads the other to write it, so
two writes at once (a probe and a catalog, here or in another muse-acp) both last.
``recall`` gives what is remembered of an executable: its probe only while the file at that
path has the size and modification time it was probed with (an updated Muse is probed again),
its catalog (a ``model/list`` result as JSON) whatever the executable's state, since a catalog
from before an update is still the best first menu until a host lists the current one. A
missing, unreadable or garbled file is nothing remembered of its part; the single file earlier
versions kept for both is not read, and a write removes it. ``remember_probe`` (which writes
nothing when its file holds that probe already) and ``remember_catalog`` each replace their own
part only; they raise ``OSError`` for the caller to log (nothing depends on the memory).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from muse_acp.host.binary import MuseBinary

__all__ = [
    "MAX_MEMORY_BYTES",
    "Remembered",
    "memory_dir",
    "recall",
    "remember_catalog",
    "remember_probe",
]

MAX_MEMORY_BYTES: Final = 4 * 1024 * 1024
"""Largest memory file read (a catalog of a few hundred models is far smaller)."""
_FOLDER: Final = "executables"


@dataclass(frozen=True, slots=True)
class Remembered:
    """What is remembered of one executable (see the module contract)."""

    probe: MuseBinary | None = None
    catalog: dict[str, Any] | None = None
    """The ``model/list`` result its last host gave, as JSON."""


def memory_dir(data_dir: Path) -> Path:
    return data_dir / _FOLDER


def _file(folder: Path, path: str, member: str | None) -> Path:
    """``member``'s file of the executable at ``path``; None: the single file earlier versions
    of muse-acp kept for both parts, which is not read any more."""
    digest = hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return folder / (f"{digest}.json" if member is None else f"{digest}.{member}.json")


def _identity(path: str) -> list[int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns]


def _read(folder: Path, path: str, member: str) -> dict[str, Any]:
    try:
        with _file(folder, path, member).open("rb") as handle:
            raw = handle.read(MAX_MEMORY_BYTES + 1)
        document = json.loads(raw) if len(raw) <= MAX_MEMORY_BYTES else None
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("path") != path:
        return {}  # another file, or a hash collision: not this executable's
    return document


def _probe_of(stored: object, path: str) -> MuseBinary | None:
    if not isinstance(stored, dict):
        return None
    version, text = stored.get("version"), stored.get("versionText")
    flags, exec_flags = stored.get("serveFlags"), stored.get("execFlags")
    if not (
        (version is None or isinstance(version, str))
        and isinstance(text, str)
        and isinstance(stored.get("serves"), bool)
        and isinstance(flags, list)
        and all(isinstance(flag, str) for flag in flags)
        and (exec_flags is None or isinstance(exec_flags, list))
    ):
        return None
    return MuseBinary(
        path=path,
        version=version,
        version_text=text,
        serves=bool(stored["serves"]),
        serve_flags=frozenset(flags),
        exec_flags=None if exec_flags is None else frozenset(map(str, exec_flags)),
    )


def recall(folder: Path, path: str) -> Remembered:
    """What is remembered of the executable at ``path`` (see the module contract)."""
    document = _read(folder, path, "probe")
    identity = _identity(path)
    probe = None
    if identity is not None and document.get("identity") == identity:
        probe = _probe_of(document.get("probe"), path)
    catalog = _read(folder, path, "catalog").get("catalog")
    return Remembered(probe, catalog if isinstance(catalog, dict) else None)


def _private_folder(folder: Path) -> None:
    """``folder`` made owner-only, and its parent (the data directory) too when this makes it;
    an existing data directory keeps the mode its owner chose."""
    folder.parent.parent.mkdir(parents=True, exist_ok=True)
    for made in (folder.parent, folder):
        with contextlib.suppress(FileExistsError):
            made.mkdir(mode=0o700)
    os.chmod(folder, 0o700)  # mkdir's mode is cut by the umask


def _write(folder: Path, path: str, member: str, document: dict[str, object]) -> None:
    """Replace ``member``'s file of the executable at ``path`` with ``document`` (whole: what
    was there is not read, so a write of the other part at the same moment is kept)."""
    _private_folder(folder)
    document = {"path": path, **document}
    target = _file(folder, path, member)
    fd, staging = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, separators=(",", ":"))
        os.replace(staging, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging)
        raise
    with contextlib.suppress(OSError):  # nothing stale is left behind
        os.unlink(_file(folder, path, None))


def remember_probe(folder: Path, binary: MuseBinary) -> None:
    """Remember ``binary``'s probe, for the executable as it is on disk now, unless that is
    what is remembered already."""
    identity = _identity(binary.path)
    if identity is None:
        return  # gone meanwhile: nothing true to remember
    probe = {
        "version": binary.version,
        "versionText": binary.version_text,
        "serves": binary.serves,
        "serveFlags": sorted(binary.serve_flags),
        "execFlags": None if binary.exec_flags is None else sorted(binary.exec_flags),
    }
    document: dict[str, object] = {"identity": identity, "probe": probe}
    if _read(folder, binary.path, "probe") == {"path": binary.path, **document}:
        return  # remembered already: a write would change nothing but race other writers
    _write(folder, binary.path, "probe", document)


def remember_catalog(folder: Path, path: str, catalog: dict[str, Any]) -> None:
    """Remember ``catalog`` (a ``model/list`` result as JSON) for the executable at ``path``."""
    _write(folder, path, "catalog", {"catalog": catalog})
