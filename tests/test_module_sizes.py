"""Every hand-written module stays small: at most ``MAX_LINES`` lines, at most ``MAX_MODULES``
modules in one folder.

The rule tests/agent/test_structure.py holds the agent core to, applied to every package of
``runtime/muse_acp`` (simulator, client, rpc, host...) and to ``codegen/``. The generated
bindings are left out: they are written by codegen, not by hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
TREES: Final = (ROOT / "runtime" / "muse_acp", ROOT / "codegen")
GENERATED: Final = ROOT / "generated"
MAX_LINES: Final = 400
MAX_MODULES: Final = 25
"""Modules in one folder (its ``__init__`` not counted)."""


def _modules(trees: Iterable[Path]) -> list[Path]:
    return sorted(path for tree in trees for path in tree.rglob("*.py"))


def _name(path: Path) -> str:
    return (path.relative_to(ROOT) if path.is_relative_to(ROOT) else path).as_posix()


def oversized(trees: Iterable[Path]) -> list[str]:
    """Each module over ``MAX_LINES`` lines, named with its size."""
    breaches = []
    for path in _modules(trees):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_LINES:
            breaches.append(f"{_name(path)} has {lines} lines (limit {MAX_LINES})")
    return breaches


def crowded(trees: Iterable[Path]) -> list[str]:
    """Each folder holding more than ``MAX_MODULES`` modules, named with its count."""
    folders: dict[Path, int] = {}
    for path in _modules(trees):
        folders[path.parent] = folders.get(path.parent, 0) + (path.stem != "__init__")
    return [
        f"{_name(folder)} holds {count} modules (limit {MAX_MODULES})"
        for folder, count in sorted(folders.items())
        if count > MAX_MODULES
    ]


def test_no_module_is_over_the_size_limit() -> None:
    breaches = oversized(TREES)
    assert not breaches, "split these along a seam:\n" + "\n".join(breaches)


def test_no_folder_holds_too_many_modules() -> None:
    breaches = crowded(TREES)
    assert not breaches, "give these a subpackage:\n" + "\n".join(breaches)


def test_the_checks_see_every_hand_written_tree_and_nothing_generated() -> None:
    seen = {path.relative_to(ROOT).as_posix() for path in _modules(TREES)}
    assert "runtime/muse_acp/sim/model/runner.py" in seen
    assert "runtime/muse_acp/rpc/dispatcher.py" in seen
    assert "codegen/generate.py" in seen
    assert not [path for path in _modules(TREES) if path.is_relative_to(GENERATED)]


def _tree(root: Path, sizes: dict[str, int]) -> Path:
    tree = root / "pkg"
    for name, lines in sizes.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text("x = 1\n" * lines, encoding="utf-8")
    return tree


def test_the_size_check_names_a_module_one_line_over(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"fits.py": MAX_LINES, "deep/over.py": MAX_LINES + 1})
    found = oversized([tree])
    assert len(found) == 1
    assert found[0].endswith(f"deep/over.py has {MAX_LINES + 1} lines (limit {MAX_LINES})")


def test_the_folder_check_names_a_folder_one_module_over(tmp_path: Path) -> None:
    names = {f"full/m{index}.py": 1 for index in range(MAX_MODULES)}
    names |= {f"over/m{index}.py": 1 for index in range(MAX_MODULES + 1)}
    tree = _tree(tmp_path, {"full/__init__.py": 1, "over/__init__.py": 1, **names})
    found = crowded([tree])
    assert len(found) == 1
    assert found[0].endswith(f"pkg/over holds {MAX_MODULES + 1} modules (limit {MAX_MODULES})")
