"""Module docstrings stay short contracts, and no benchmark figure hides in the runtime's code.

Every module of ``runtime/muse_acp`` opens with a docstring of at most ``MAX_DOCSTRING_LINES``
lines: what it promises, its errors, its seams; behaviour in detail belongs to docs/ or to a
test's name. Measured figures (timings, throughputs, speed ratios) belong to
docs/performance.md, where the bench that measures them is explained, never to code, where
nothing keeps them true. A docstring that names a module by its dotted path names one that
exists.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
RUNTIME: Final = ROOT / "runtime" / "muse_acp"
MODULES: Final = sorted(RUNTIME.rglob("*.py"))
MAX_DOCSTRING_LINES: Final = 15
FIGURE: Final = re.compile(
    r"µs|\bMiB/s\b|\bms of CPU\b|\b\d+(?:\.\d+)?\s?(?:ns|us|ms)\s(?:a|per|each)\b"
    r"|\b\d+(?:\.\d+)?\s?->\s?\d+(?:\.\d+)?\b|\b(?:times|x)\s(?:faster|slower|cheaper)\b"
    r"|\b(?:a|one)\s(?:half|third|quarter|tenth)\sof\s(?:the\s|its\s)?(?:cost|CPU|time)\b",
    re.IGNORECASE,
)
"""What a measured figure looks like in prose: a unit of time or throughput, a before -> after
pair, or a speed ratio."""
DOTTED_MODULE: Final = re.compile(r"``(muse_acp(?:_wire)?(?:\.\w+)+)``")


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def module_docstring(path: Path) -> str | None:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or a name in one, as the code stands."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_every_runtime_module_opens_with_a_short_contract() -> None:
    assert len(MODULES) > 100
    missing = [relative(path) for path in MODULES if not module_docstring(path)]
    too_long = {
        relative(path): len(docstring.splitlines())
        for path in MODULES
        if (docstring := module_docstring(path))
        and len(docstring.splitlines()) > MAX_DOCSTRING_LINES
    }
    assert not missing, f"modules without a docstring: {missing}"
    assert not too_long, (
        f"module docstrings over {MAX_DOCSTRING_LINES} lines (move the detail to docs/): {too_long}"
    )


def test_no_benchmark_figure_in_the_runtime() -> None:
    found = [
        f"{relative(path)}:{number}: {match.group(0)!r}"
        for path in MODULES
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if (match := FIGURE.search(line))
    ]
    assert not found, f"figures belong in docs/performance.md, not in code: {found}"


def test_the_figure_pattern_catches_what_it_is_for() -> None:
    for figure in (
        "12.0 µs per update",
        "101.7 MiB/s",
        "2.59 ms of CPU per MiB",
        "14 us a delta",
        "0.438 -> 0.425",
        "several times faster",
        "a third of the cost",
    ):
        assert FIGURE.search(figure), figure
    for prose in ("def f() -> int:", "a 10 MiB frame limit", "within 5 seconds", "one third"):
        assert not FIGURE.search(prose), prose


def test_dotted_module_names_in_docstrings_exist() -> None:
    stale = [
        f"{relative(path)}: {name}"
        for path in MODULES
        for name in DOTTED_MODULE.findall(module_docstring(path) or "")
        if not resolves(name)
    ]
    assert not stale, f"docstrings name modules that do not exist: {stale}"
