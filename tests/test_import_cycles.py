"""No circle of imports among the runtime's modules: each module can be read, loaded and
replaced on top of the ones it imports.

Every import statement counts, wherever it is: at the top, in a function body (a deferred
import) or under ``if TYPE_CHECKING:`` (a type-only circle still ties two modules together).
A package counts as its ``__init__`` module; importing a module does not count as importing
its parent package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

RUNTIME: Final = Path(__file__).resolve().parent.parent / "runtime"


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module under ``root``: its dotted name, file and whether it is a package."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if package else parts)
        found[name] = (path, package)
    return found


def _imported(name: str, path: Path, package: bool) -> Iterator[str]:
    """The dotted names ``name``'s import statements mention, relative ones resolved."""
    here = name if package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Which runtime modules each module under ``root`` imports."""
    modules = _modules(root)
    return {
        name: {target for target in _imported(name, *found) if target in modules} - {name}
        for name, found in modules.items()
    }


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The circles of ``graph``: its strongly connected components of two or more modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_runtime_module_is_in_an_import_circle() -> None:
    graph = import_graph(RUNTIME)
    # The modules this guards most closely are really in the graph, with their imports.
    assert {"muse_acp.cli", "muse_acp.cli_commands", "muse_acp.serving"} <= graph.keys()
    assert "muse_acp.client.session" in graph["muse_acp.client.connection"]
    assert "muse_acp.serving" in graph["muse_acp.cli_commands"]
    # The simulator's session, once tied to its turn machinery, is checked with the rest.
    assert "muse_acp.sim.script.turn_requests" in graph["muse_acp.sim.state.session"]
    assert "muse_acp.sim.state.session" in graph["muse_acp.sim.model.runner"]
    assert cycles(graph) == []


def test_type_only_deferred_and_relative_imports_close_a_circle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
    )
    (package / "b.py").write_text("def f():\n    from . import c\n")
    (package / "c.py").write_text("from .a import A\n")
    (package / "d.py").write_text("import pkg.a\n")
    assert cycles(import_graph(tmp_path)) == [["pkg.a", "pkg.b", "pkg.c"]]
