"""The agent core's shape: imports flow one way, modules stay small, state lives in sessions.

Checked statically (every import statement, ``TYPE_CHECKING`` blocks and function bodies
included) and by importing each module alone in a fresh interpreter.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TypeVar

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"
PACKAGES = ("muse_acp.agent", "muse_acp.host")
MAX_LINES = 400

# Module-level mutable values that are not per-session state, and why.
ALLOWED_MODULE_STATE = {
    # Probe results per Muse executable (path, size, mtime), shared by every agent and doctor.
    ("muse_acp.host.binary", "_cache"),
    # Probes started before the agent finished loading, collected once by the first probe.
    ("muse_acp.host.binary", "_early"),
}


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        folder = RUNTIME / package.replace(".", "/")
        names += sorted(f"{package}.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__")
    return names


MODULES = _modules()


def _path(module: str) -> Path:
    return RUNTIME / (module.replace(".", "/") + ".py")


def _imports(module: str) -> Iterator[str]:
    """Every module of the agent core or host package that ``module`` imports, anywhere."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        yield from (target for target in targets if target in MODULES)


GRAPH = {module: set(_imports(module)) for module in MODULES}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in GRAPH[node]:
                found.append(sorted(component))

    for node in MODULES:
        if node not in index:
            visit(node)
    return found


def test_the_import_graph_has_no_cycles() -> None:
    assert _cycles() == []


def test_a_cycle_would_be_found() -> None:
    # The check itself must be able to fail.
    GRAPH["muse_acp.agent.failures"].add("muse_acp.agent.server")
    try:
        assert _cycles()
    finally:
        GRAPH["muse_acp.agent.failures"].discard("muse_acp.agent.server")


def _handler_modules() -> set[str]:
    handlers = set()
    for module in MODULES:
        tree = ast.parse(_path(module).read_text(encoding="utf-8"))
        if any(
            isinstance(node, ast.AsyncFunctionDef) and node.name.startswith("handle_")
            for node in tree.body
        ):
            handlers.add(module)
    return handlers


def test_no_handler_module_imports_another() -> None:
    handlers = _handler_modules()
    assert "muse_acp.agent.prompting" in handlers
    crossing = {
        (module, target)
        for module in handlers
        for target in GRAPH[module] & handlers
        if module != "muse_acp.agent.routes"  # the handler tables
    }
    assert crossing == set()


@pytest.mark.parametrize("module", MODULES)
def test_no_module_is_over_the_size_limit(module: str) -> None:
    lines = _path(module).read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module} has {lines} lines"


_MUTABLE_CALLS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "WeakKeyDictionary"}


def _module_state(module: str) -> Iterator[str]:
    """Names bound at module level to a mutable container."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        mutable = isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp)
        if isinstance(value, ast.Call):
            func = value.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            mutable = name in _MUTABLE_CALLS
        if mutable:
            yield from (t.id for t in targets if isinstance(t, ast.Name) and t.id != "__all__")


def test_no_module_keeps_state_of_its_own() -> None:
    state = {(module, name) for module in MODULES for name in _module_state(module)}
    assert state == ALLOWED_MODULE_STATE


def _defined_here(module: ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, TypeVar)
        and getattr(value, "__module__", None) == module.__name__
    }


@pytest.mark.parametrize("name", MODULES)
def test_each_module_exports_exactly_what_it_defines_for_others(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(set(exported)) == len(exported)
    assert all(hasattr(module, member) for member in exported)
    assert _defined_here(module) <= set(exported)


# Each module is imported in a child forked from one interpreter that has loaded only
# third-party packages and the generated bindings (no muse_acp module), so each import runs
# as it would alone, without paying an interpreter start per module.
_IMPORT_ALONE = """
import importlib, json, os, sys, traceback
import anyio, pydantic, muse_acp_wire.acp, muse_acp_wire.msp
assert not [name for name in sys.modules if name.split(".")[0] == "muse_acp"]
failures = {}
for name in sys.argv[1:]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(name)
        except BaseException:
            os.write(write, traceback.format_exc()[-500:].encode())
            os._exit(1)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode(errors="replace")
    if os.waitpid(pid, 0)[1] != 0:
        failures[name] = text
print(json.dumps(failures))
"""


def test_each_module_imports_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALONE, *MODULES],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert json.loads(done.stdout) == {}


def test_the_import_check_reports_a_module_that_fails_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALONE, "muse_acp.agent.no_such_module"],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert "ModuleNotFoundError" in json.loads(done.stdout)["muse_acp.agent.no_such_module"]


def test_the_check_sees_every_module() -> None:
    assert "muse_acp.agent.session" in MODULES
    assert "muse_acp.host.client" in MODULES
    assert not subprocess.run(
        [sys.executable, "-c", "import muse_acp.agent"], check=False
    ).returncode
