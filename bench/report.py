"""Figures as data: one table for people, one JSON document for comparing commits.

Contract: a figure module returns a ``Figure``: its measurements (subject, value, unit) and the
ratios that put them against a peer or a limit. ``render_table`` prints every figure of a run
as one aligned text table; ``to_json`` / ``write_json`` give the same numbers as a JSON
document (``{"machine": ..., "figures": [...]}``) whose keys stay stable between commits.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "Figure",
    "Measurement",
    "Ratio",
    "machine",
    "ratios_of",
    "render_table",
    "to_json",
    "write_json",
]

_HEADINGS: Final = ("figure", "measured", "value", "unit")


@dataclass(frozen=True, slots=True)
class Measurement:
    subject: str
    value: float
    unit: str


@dataclass(frozen=True, slots=True)
class Ratio:
    """``numerator / denominator`` of two measurements; ``higher_is_better`` says how to read it."""

    name: str
    value: float
    higher_is_better: bool = True


def ratios_of(
    name: str, numerator: float, denominator: float, *, higher_is_better: bool = True
) -> tuple[Ratio, ...]:
    """The ratio of two measurements, or nothing when either is not positive (a CPU time below
    the clock's resolution in a tiny run, say), so that no figure ever holds an infinity."""
    if numerator <= 0 or denominator <= 0:
        return ()
    return (Ratio(name, numerator / denominator, higher_is_better),)


@dataclass(frozen=True, slots=True)
class Figure:
    key: str
    """A stable identifier (``runtime_throughput``), also the JSON key."""
    title: str
    measurements: tuple[Measurement, ...]
    ratios: tuple[Ratio, ...] = ()
    note: str = ""

    def value(self, subject: str) -> float:
        """The value measured for ``subject`` (KeyError when there is none)."""
        for measurement in self.measurements:
            if measurement.subject == subject:
                return measurement.value
        raise KeyError(subject)


def _number(value: float) -> str:
    if value == 0:
        return "0"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if value >= 0.01 else f"{value:.2e}"


def render_table(figures: Sequence[Figure]) -> str:
    """Every figure's measurements, then its ratios, as one aligned table."""
    rows: list[tuple[str, str, str, str]] = []
    for figure in figures:
        title = figure.title
        for measurement in figure.measurements:
            rows.append((title, measurement.subject, _number(measurement.value), measurement.unit))
            title = ""
        for ratio in figure.ratios:
            reading = "higher is better" if ratio.higher_is_better else "lower is better"
            rows.append((title, ratio.name, f"{ratio.value:.3g}", f"x ({reading})"))
            title = ""
    widths = [max(len(row[i]) for row in (*rows, _HEADINGS)) for i in range(4)]

    def line(cells: Sequence[str]) -> str:
        first, subject, value, unit = cells
        return "  ".join(
            (
                first.ljust(widths[0]),
                subject.ljust(widths[1]),
                value.rjust(widths[2]),
                unit.ljust(widths[3]),
            )
        ).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join((line(_HEADINGS), rule, *(line(row) for row in rows)))


def machine() -> dict[str, object]:
    """What the figures were measured on."""
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
        "executable": Path(sys.executable).name,
    }


def to_json(figures: Sequence[Figure]) -> dict[str, object]:
    return {
        "machine": machine(),
        "figures": {
            figure.key: {
                "title": figure.title,
                "measurements": {
                    m.subject: {"value": m.value, "unit": m.unit} for m in figure.measurements
                },
                "ratios": {
                    r.name: {"value": r.value, "higherIsBetter": r.higher_is_better}
                    for r in figure.ratios
                },
                "note": figure.note,
            }
            for figure in figures
        },
    }


def write_json(figures: Sequence[Figure], path: Path) -> None:
    path.write_text(json.dumps(to_json(figures), indent=2) + "\n")
