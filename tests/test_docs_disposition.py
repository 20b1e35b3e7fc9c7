"""docs/msp-disposition.md against the MSP bundles: a row for everything Muse can send.

Every notification and server request that a bundle declares (``CLIENT_NOTIFICATIONS`` and
``CLIENT_REQUESTS`` of each generated ``muse_acp_wire.msp_*`` module) has exactly one row in
its section, whose **Bundles** column names the bundles that declare it; no row names a method
no bundle declares, except in the section for releases not ingested yet, which in turn names
only methods no bundle declares (an ingested one's row moves up, with what muse-acp does).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, NamedTuple

import pytest

from muse_acp_wire.msp_bundles import BUNDLES

ROOT: Final = Path(__file__).resolve().parents[1]
DOCUMENT: Final = ROOT / "docs" / "msp-disposition.md"
NOTIFICATIONS: Final = "Notifications (host to muse-acp)"
REQUESTS: Final = "Server requests (host asks muse-acp)"
NOT_INGESTED: Final = "Releases not ingested yet"
DISPOSITIONS: Final = frozenset({"mapped", "internal", "logged", "ignored", "gap"})
ROW: Final = re.compile(r"^\| `([^`]+)` \|(.*)\|$")


class Row(NamedTuple):
    method: str
    cells: tuple[str, ...]
    """The cells after the method's, stripped."""


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


VERSIONS: Final = sorted(BUNDLES, key=_version_key)
"""Every bundle's host version, oldest first."""


def declared(table: str) -> dict[str, list[str]]:
    """Each method of ``table`` in any bundle, with the versions that declare it, oldest first."""
    found: dict[str, list[str]] = {}
    for version in VERSIONS:
        module = importlib.import_module(BUNDLES[version])
        methods: Mapping[str, object] = getattr(module, table)
        for method in methods:
            found.setdefault(method, []).append(version)
    return found


def bundles_text(versions: Sequence[str]) -> str:
    """How the **Bundles** column names ``versions`` (see the document's own explanation)."""
    index = [VERSIONS.index(version) for version in versions]
    runs: list[list[int]] = []
    for position in index:
        if runs and position == runs[-1][-1] + 1:
            runs[-1].append(position)
        else:
            runs.append([position])
    if len(runs) == 1 and runs[0][-1] == len(VERSIONS) - 1:
        return f"since {VERSIONS[runs[0][0]]}"
    return ", ".join(
        VERSIONS[run[0]] if len(run) == 1 else f"{VERSIONS[run[0]]} to {VERSIONS[run[-1]]}"
        for run in runs
    )


def sections(text: str) -> dict[str, list[Row]]:
    """The table rows under each ``##`` heading of ``text`` (rows naming a method only)."""
    found: dict[str, list[Row]] = {}
    current: list[Row] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:].strip(), [])
            continue
        match = ROW.match(line)
        if match and current is not None:
            cells = tuple(cell.strip() for cell in match.group(2).split(" | "))
            current.append(Row(match.group(1), cells))
    return found


def problems(text: str) -> list[str]:
    """What the document ``text`` gets wrong about the bundles; empty when nothing."""
    found = sections(text)
    wrong: list[str] = []
    every_declared: set[str] = set()
    for heading, table in ((NOTIFICATIONS, "CLIENT_NOTIFICATIONS"), (REQUESTS, "CLIENT_REQUESTS")):
        expected = declared(table)
        every_declared |= set(expected)
        rows = found.get(heading)
        if rows is None:
            wrong.append(f"no section {heading!r}")
            continue
        named = [row.method for row in rows]
        for method in sorted({m for m in named if named.count(m) > 1}):
            wrong.append(f"{method} has more than one row in {heading!r}")
        for method in sorted(set(expected) - set(named)):
            wrong.append(f"{method} ({table} of {', '.join(expected[method])}) has no row")
        for row in rows:
            if row.method not in expected:
                wrong.append(f"{row.method} has a row in {heading!r} but no bundle declares it")
                continue
            if len(row.cells) != 3:
                wrong.append(f"{row.method}: the row has {len(row.cells) + 1} cells, not 4")
                continue
            bundles, does, why = row.cells
            if bundles != bundles_text(expected[row.method]):
                wrong.append(
                    f"{row.method}: Bundles says {bundles!r}, the bundles say "
                    f"{bundles_text(expected[row.method])!r}"
                )
            if does not in DISPOSITIONS:
                wrong.append(f"{row.method}: {does!r} is not one of {sorted(DISPOSITIONS)}")
            if not why:
                wrong.append(f"{row.method}: the row gives no reason")
    for row in found.get(NOT_INGESTED, []):
        if row.method in every_declared:
            wrong.append(
                f"{row.method} is declared by a bundle now: move its row from {NOT_INGESTED!r} "
                "to its table, with what muse-acp does with it"
            )
    return wrong


def test_the_disposition_document_has_a_true_row_for_everything_muse_can_send() -> None:
    assert problems(DOCUMENT.read_text(encoding="utf-8")) == []


def test_the_disposition_document_is_linked_from_the_documentation_index() -> None:
    assert "(msp-disposition.md)" in (ROOT / "docs" / "README.md").read_text(encoding="utf-8")


def _without_row(text: str, method: str) -> str:
    lines = text.splitlines()
    kept = [line for line in lines if not line.startswith(f"| `{method}` |")]
    assert len(kept) == len(lines) - 1
    return "\n".join(kept)


@pytest.mark.parametrize(
    ("table", "method"),
    [("CLIENT_NOTIFICATIONS", "turn/completed"), ("CLIENT_REQUESTS", "approval/request")],
)
def test_a_declared_method_without_a_row_is_reported(table: str, method: str) -> None:
    assert method in declared(table)
    text = _without_row(DOCUMENT.read_text(encoding="utf-8"), method)
    assert any(problem.startswith(f"{method} (") for problem in problems(text))


def test_wrong_versions_an_undeclared_row_and_a_stale_upcoming_row_are_reported() -> None:
    text = DOCUMENT.read_text(encoding="utf-8")
    row = "| `turn/completed` |"
    assert text.count(row) == 1
    # A notification every bundle declares, claimed for none but the newest.
    wrong = text.replace(f"{row} since {VERSIONS[0]} |", f"{row} 0.0.1 |")
    assert wrong != text
    assert any(p.startswith("turn/completed: Bundles says '0.0.1'") for p in problems(wrong))
    # A row in the notifications table for a method no bundle declares.
    invented = text.replace(row, f"| `turn/imagined` | since {VERSIONS[0]} | gap | x |\n{row}")
    assert any(p.startswith("turn/imagined has a row") for p in problems(invented))
    # A declared notification listed as not ingested yet.
    heading = f"## {NOT_INGESTED}\n"
    stale = text.replace(heading, f"{heading}\n| `item/delta` | 1.4.13 | dropped | x |\n")
    assert any(p.startswith("item/delta is declared by a bundle now") for p in problems(stale))
    assert problems(text) == []


def test_the_bundles_column_names_runs_of_versions() -> None:
    assert bundles_text(VERSIONS) == f"since {VERSIONS[0]}"
    assert bundles_text(VERSIONS[-1:]) == f"since {VERSIONS[-1]}"
    assert len(VERSIONS) >= 3
    assert bundles_text(VERSIONS[:1]) == VERSIONS[0]
    assert bundles_text(VERSIONS[:-1]) == f"{VERSIONS[0]} to {VERSIONS[-2]}"
    assert bundles_text([VERSIONS[0], VERSIONS[-1]]) == f"{VERSIONS[0]}, {VERSIONS[-1]}"
