"""No circle of imports among the runtime's modules: each module can be read, loaded and
replaced on top of the ones it imports.

Every import statement counts, wherever it is: at the top, in a function body (a deferred
import) or under ``if TYPE_CHECKING:`` (a type-only circle still ties two modules together).
A package counts as its ``__init__`` module; importing a module does not count as importing
its parent package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from tests.imports import cycles, import_graph

RUNTIME: Final = Path(__file__).resolve().parent.parent / "runtime"


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
