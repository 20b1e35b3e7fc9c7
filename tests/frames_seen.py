"""The frames of every agent the tests start, for the check each wire test ends with.

One registry for the whole test process: the harness modules are imported under two names (as
``agent_wire.harness`` by the tests of their folder, as ``tests.agent_wire.harness`` by others),
so the registry lives here, imported by one name only. ``record_frames`` registers an agent's
growing list; ``recorded_frames`` hands out what each wrote since the last call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Frame", "Recorded", "record_frames", "recorded_frames"]

Frame = tuple[str, dict[str, Any]]
"""A recorded frame: ``"in"`` (written by the agent) or ``"out"`` (sent to it), and its message."""


@dataclass
class Recorded:
    """The frames of one agent, and how many of them the end-of-test check has seen."""

    frames: list[Frame] = field(default_factory=list)
    checked: int = 0
    ended: bool = False
    """The agent has stopped: its frames are dropped once handed out."""


_recorded: list[Recorded] = []
"""Every agent's frames since its start, while any of them is left unchecked or it runs."""


def record_frames(frames: list[Frame]) -> Recorded:
    """Have ``frames`` (an agent's, growing as it runs) checked at the end of each test; the
    caller marks the record ``ended`` when the agent stops."""
    record = Recorded(frames)
    _recorded.append(record)
    return record


def recorded_frames() -> list[tuple[list[Frame], int]]:
    """Each recorded agent's frames with the index of its first frame not yet handed out here:
    a test sees the frames written since the last call, whichever test started the agent (a
    module's shared agent too). Agents that stopped are forgotten."""
    found = [(r.frames, r.checked) for r in _recorded if len(r.frames) > r.checked]
    for record in _recorded:
        record.checked = len(record.frames)
    _recorded[:] = [r for r in _recorded if not r.ended]
    return found
