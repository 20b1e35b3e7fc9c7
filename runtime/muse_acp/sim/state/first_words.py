"""When the host read each ``turn/start`` and wrote each turn's first words, for the bench.

Contract: a ``FirstWords`` observes the frames the host reads and writes (``MUSE_SIM_TIMINGS``
names the directory it writes to). It notes, on ``time.perf_counter`` (the monotonic clock every
process on the machine reads alike), when a ``turn/start`` request was read and when the first
text delta (``item/delta`` of ``field: text``) after it was written; at most ``MAX_MARKS``, the
rest not noted. ``write`` leaves them in a file of their own in that directory, one JSON line
per mark (``{"at": seconds, "mark": "turn/start" | "text"}``). Looking costs two byte searches
per frame, so a measured host answers as it would unobserved.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Final, Literal

__all__ = ["MAX_MARKS", "TIMINGS_ENV", "FirstWords"]

TIMINGS_ENV: Final = "MUSE_SIM_TIMINGS"
MAX_MARKS: Final = 100_000

_TURN_START: Final = b'"method":"turn/start"'
_DELTA_HEAD: Final = b'{"jsonrpc":"2.0","method":"item/delta",'
_TEXT_FIELD: Final = b'"field":"text"'

Mark = Literal["turn/start", "text"]


class FirstWords:
    """The marks of one host connection (see the module contract)."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self.marks: list[tuple[float, Mark]] = []
        self._spoken = True
        """The turn last started has had its first text delta written (or none started yet)."""

    def observe(self, direction: Literal["in", "out"], frame: bytes) -> None:
        """The connection's frame observer: a frame read (``in``) or about to be written."""
        if direction == "in":
            if _TURN_START in frame:
                self._note("turn/start")
                self._spoken = False
        elif not self._spoken and frame.startswith(_DELTA_HEAD) and _TEXT_FIELD in frame:
            self._note("text")
            self._spoken = True

    def written(self, frame: bytes) -> None:
        """A frame about to be written by the host's writer (events take no other way)."""
        self.observe("out", frame)

    def _note(self, mark: Mark) -> None:
        if len(self.marks) < MAX_MARKS:
            self.marks.append((time.perf_counter(), mark))

    def write(self) -> Path:
        """Write the marks to a new file in the directory; its path."""
        self._directory.mkdir(parents=True, exist_ok=True)
        path = self._directory / f"muse-sim-{os.getpid()}-{id(self):x}.jsonl"
        lines = (json.dumps({"at": at, "mark": mark}) + "\n" for at, mark in self.marks)
        path.write_text("".join(lines), encoding="utf-8")
        return path
