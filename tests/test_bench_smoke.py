"""The performance harness (``python -m bench``) still runs: every figure at a tiny size.

The numbers of a smoke run say nothing about speed; only that each figure's code path works
end to end and produces sane, positive numbers, written as JSON and printed as one table.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.__main__ import FIGURES, main


def test_a_smoke_run_measures_every_figure_with_positive_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.json"
    assert main(["--smoke", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert list(results["figures"]) == list(FIGURES)
    for key, figure in results["figures"].items():
        measured = figure["measurements"]
        ratios = [r["value"] for r in figure["ratios"].values()]
        assert measured, key
        assert ratios, key
        for subject, measurement in measured.items():
            value = measurement["value"]
            # A CPU time may round down to zero clock ticks in so tiny a run, a few sessions
            # may not grow the resident set by a page, and an idle agent may not wake at all;
            # nothing else may be zero.
            zero_allowed = ("CPU", "memory per", "wake-ups")
            least = 0 if any(word in subject for word in zero_allowed) else math.ulp(0)
            assert math.isfinite(value), (key, subject, value)
            assert value >= least, (key, subject, value)
        assert all(math.isfinite(v) and v > 0 for v in ratios), (key, figure)
    table = capsys.readouterr().out
    for figure in results["figures"].values():
        assert figure["title"] in table
