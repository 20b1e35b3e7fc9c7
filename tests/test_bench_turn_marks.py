"""The bench's split of a wait for first words into the way to Muse, Muse itself and the way
back, from muse-sim's marks: table-tested on made-up marks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.turn_marks import Split, read_marks, split

MARKS = [
    (1.0, "turn/start"),  # a turn of another way, before the windows
    (1.5, "text"),
    (10.2, "turn/start"),
    (10.9, "text"),
    (11.0, "text"),  # the first words of another host, later
    (20.3, "turn/start"),
    (21.0, "text"),
]


def test_each_window_is_split_at_its_own_turns_marks() -> None:
    parts = split(MARKS, [(10.0, 11.5), (20.0, 21.25)])
    assert [(round(p.to_muse, 6), round(p.in_muse, 6), round(p.back, 6)) for p in parts] == [
        (0.2, 0.7, 0.6),
        (0.3, 0.7, 0.25),
    ]
    assert all(isinstance(part, Split) for part in parts)


@pytest.mark.parametrize(
    ("window", "missing"),
    [
        ((2.0, 9.0), "no turn/start"),
        ((20.0, 20.5), "no first words"),
        ((12.0, 19.0), "no turn/start"),
    ],
)
def test_a_window_without_its_marks_is_refused(window: tuple[float, float], missing: str) -> None:
    with pytest.raises(ValueError, match=missing):
        split(MARKS, [window])


def test_marks_of_every_host_are_read_in_time_order(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(
        "".join(json.dumps({"at": at, "mark": mark}) + "\n" for at, mark in MARKS[2:4])
    )
    (tmp_path / "b.jsonl").write_text(
        "".join(json.dumps({"at": at, "mark": mark}) + "\n" for at, mark in MARKS[:2])
    )
    assert read_marks(tmp_path) == MARKS[:4]
