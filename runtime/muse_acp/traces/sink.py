"""The trace file: created owner-only, written line by line, capped, the oldest traces pruned.

Contract: a ``TraceSink`` is used from one thread at a time. Its file is created on the
first ``write`` (the folder ``0700``, the file ``0600``, a new name ``trace-<UTC time>-<pid>
.jsonl``; only the newest ``KEEP`` traces of the folder are kept) and starts with a ``header``
line. Each entry is redacted (``redaction``; a log line or a decision keeps its words, muse-acp's
own, without secrets) and written as one JSON line. Once the file would exceed ``max_bytes`` a
``capped`` line says so and later entries are only counted; ``close`` writes an ``end`` line
with what was written and lost (it may pass the cap by that line).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TypeAlias

from pydantic_core import to_json

from muse_acp import __version__
from muse_acp.rpc import JsonValue
from muse_acp.traces.redaction import Redactor

__all__ = ["FORMAT", "KEEP", "Entry", "TraceSink"]

FORMAT: Final = 1
"""The trace format's version, in its header."""

KEEP: Final = 20
"""Traces kept in the folder: starting one removes the oldest beyond it."""

Entry: TypeAlias = tuple[int, str, str, "bytes | JsonValue"]
"""(monotonic ns, source, direction, frame bytes or a decision's value) as queued."""


class TraceSink:
    """One trace file (see the module contract)."""

    def __init__(self, folder: Path, redactor: Redactor, *, max_bytes: int, start_ns: int) -> None:
        self.folder = folder
        self.redactor = redactor
        self.max_bytes = max_bytes
        self.path: Path | None = None
        self._start = start_ns
        self._fd = -1
        self._written = 0
        self._entries = 0
        self._capped = 0
        self._lost = 0
        self._pending: list[bytes] = []
        self.failed = False
        """Set once writing failed: later entries are ignored."""

    def write(self, entries: Sequence[Entry], dropped: int) -> None:
        """Write ``entries``; ``dropped`` entries were lost before them (a full queue).

        Raises:
            OSError: the file cannot be created or written (``failed`` is then the caller's).
        """
        if self.failed:
            return
        if self._fd < 0:
            self._open()
        self.redactor.refresh()
        self._pending = []
        try:
            self._write(entries, dropped)
        finally:
            self._flush()

    def _write(self, entries: Sequence[Entry], dropped: int) -> None:
        if dropped:
            self._lost += dropped
            self._line({"t": self._ms(entries[0][0]) if entries else None, "dropped": dropped})
        for ns, source, direction, payload in entries:
            if self._capped:
                self._capped += 1  # counted, not redacted: it will not be written
                continue
            if source == "decision" and direction == "log":
                line: dict[str, JsonValue] = {"t": self._ms(ns)}
                line["log"] = self.redactor.plain(str(payload))
            elif source == "decision":
                line = {"t": self._ms(ns), "decision": direction}
                line["value"] = self.redactor.plain_value(payload)  # type: ignore[arg-type]
            else:
                assert isinstance(payload, bytes)
                frame = self.redactor.frame(payload)
                line = {"t": self._ms(ns), "on": source, "dir": direction, "frame": frame}
            self._line(line)

    @property
    def capped(self) -> bool:
        """The file reached its size limit: later entries are only counted."""
        return self._capped > 0

    def close(self) -> None:
        """Write the ``end`` line and close the file (nothing when it was never opened)."""
        if self._fd < 0:
            return
        end = {"end": True, "entries": self._entries, "capped": self._capped, "lost": self._lost}
        self._raw(json.dumps(end).encode() + b"\n")
        os.close(self._fd)
        self._fd = -1

    def _ms(self, ns: int) -> float:
        return round((ns - self._start) / 1e6, 3)

    def _line(self, line: dict[str, JsonValue]) -> None:
        if self._capped:
            self._capped += 1
            return
        data = to_json(line) + b"\n"
        if self._written + len(data) > self.max_bytes:
            self._capped = 1
            note = {"capped": self.max_bytes, "note": "the trace reached its size limit"}
            self._flush()
            self._raw(json.dumps(note).encode() + b"\n")
            return
        self._entries += 1
        self._written += len(data)
        self._pending.append(data)

    def _flush(self) -> None:
        """Write the lines of the batch at once (one system call, not one a frame)."""
        pending, self._pending = self._pending, []
        if pending:
            self._raw(b"".join(pending), counted=True)

    def _raw(self, data: bytes, *, counted: bool = False) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        if not counted:
            self._written += len(data)

    def _open(self) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = self.folder / f"trace-{stamp}-{os.getpid()}-{id(self) % 10000:04d}.jsonl"
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self.path = path
        self._prune()
        header = {
            "trace": FORMAT,
            "muse_acp": __version__,
            "mode": self.redactor.mode,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "max_bytes": self.max_bytes,
        }
        self._raw(json.dumps(header).encode() + b"\n")

    def _prune(self) -> None:
        try:
            traces = sorted(self.folder.glob("trace-*.jsonl"), key=lambda p: p.stat().st_mtime)
        except OSError:
            return
        for old in traces[:-KEEP]:
            try:
                old.unlink()
            except OSError:
                continue
