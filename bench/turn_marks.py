"""Where the wait for a reply's first words goes: the way to Muse, Muse itself, the way back.

Contract: ``read_marks(directory)`` reads the marks every ``muse-sim`` host left there
(``MUSE_SIM_TIMINGS``, see ``muse_acp.sim.state.first_words``): when each read a ``turn/start``
and wrote the turn's first text delta, on ``time.perf_counter`` (the clock every process of the
machine reads alike). ``split`` takes windows (when a prompt was written, and when its first
words were read, by the measuring client) and, for each, finds the ``turn/start`` read within it
and the first words written after that: the wait is then the way to Muse (prompt written to
``turn/start`` read), Muse's own time (to its first words written) and the way back (to the
client reading them). A window missing either mark is an error: the split would be of another
turn.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Split", "Window", "read_marks", "split"]

Window = tuple[float, float]
"""When the prompt was written, and when its first words were read (``time.perf_counter``)."""


@dataclass(frozen=True, slots=True)
class Split:
    """The three parts of one wait, in seconds."""

    to_muse: float
    in_muse: float
    back: float


def read_marks(directory: Path) -> list[tuple[float, str]]:
    """Every mark left in ``directory``, in time order."""
    marks = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            mark = json.loads(line)
            marks.append((float(mark["at"]), str(mark["mark"])))
    return sorted(marks)


def split(marks: list[tuple[float, str]], windows: Iterable[Window]) -> list[Split]:
    """The split of each window (see the module contract).

    Raises:
        ValueError: a window holds no ``turn/start`` read, or no first words after it.
    """
    starts = [at for at, mark in marks if mark == "turn/start"]
    texts = [at for at, mark in marks if mark == "text"]
    parts = []
    for written, read in windows:
        index = bisect_left(starts, written)
        if index == len(starts) or starts[index] > read:
            raise ValueError(f"no turn/start was read between {written} and {read}")
        started = starts[index]
        index = bisect_left(texts, started)
        if index == len(texts) or texts[index] > read:
            raise ValueError(f"no first words were written between {started} and {read}")
        spoke = texts[index]
        parts.append(Split(started - written, spoke - started, read - spoke))
    return parts
