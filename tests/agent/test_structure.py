"""The agent core's shape: packages in one order, imports flowing down it, modules small, state
in sessions.

The agent's packages (and the three modules on its top level) are stacked in ``ORDER``, written
once here and once in docs/architecture.md: each imports only those below it. Checked
statically (every import statement, ``TYPE_CHECKING`` blocks and function bodies included) and
by importing each module alone in a fresh interpreter.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TypeVar

import pytest

from tests.imports import cycles, mentioned

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime"
AGENT = "muse_acp.agent"
AGENT_FOLDER = RUNTIME / AGENT.replace(".", "/")
PACKAGES = (AGENT, "muse_acp.host")
MAX_LINES = 400
MAX_MODULES = 25
"""Modules in one folder of the agent (its top level included)."""

ORDER = (
    "errors",
    "asks",
    "mcp",
    "handshake",
    "options",
    "hosting",
    "cards",
    "translation",
    "turns",
    "sessions",
    "context",
    "announcements",
    "prompts",
    "commands",
    "methods",
    "routes",
    "server",
)
"""The agent's packages and top-level modules, lowest first."""

# Module-level mutable values that are not per-session state, and why.
ALLOWED_MODULE_STATE = {
    # Probe results per Muse executable (path, size, mtime), shared by every agent and doctor.
    ("muse_acp.host.binary", "_cache"),
    # Probes started before the agent finished loading, collected once by the first probe.
    ("muse_acp.host.binary", "_early"),
}


def _files(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` under ``root`` by dotted name, packages as their
    ``__init__``."""
    found = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        names += [
            name for name, path in _files(RUNTIME, package).items() if path.stem != "__init__"
        ]
    return names


MODULES = _modules()


def _path(module: str) -> Path:
    return RUNTIME / (module.replace(".", "/") + ".py")


def _imports(module: str) -> Iterator[str]:
    """Every module of the agent core or host package that ``module`` imports, anywhere."""
    yield from (target for target in mentioned(module, _path(module), False) if target in MODULES)


@functools.cache
def _graph() -> Mapping[str, frozenset[str]]:
    """Which modules each module imports: read from every source file, so read when a test
    first asks (collecting the tests needs only the names), and once."""
    return {module: frozenset(_imports(module)) for module in MODULES}


def test_the_import_graph_has_no_cycles() -> None:
    assert cycles(_graph()) == []


def test_a_cycle_would_be_found() -> None:
    # The check itself must be able to fail.
    graph = {module: set(targets) for module, targets in _graph().items()}
    graph["muse_acp.agent.errors.failures"].add("muse_acp.agent.server")
    assert cycles(graph)


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
    methods = {module for module in MODULES if module.startswith(f"{AGENT}.methods.")}
    assert handlers - {f"{AGENT}.routes"} == methods
    crossing = {
        (module, target)
        for module in handlers
        for target in _graph()[module] & handlers
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


# Each module is imported in a child forked from one interpreter that has loaded only the
# standard library, third-party packages and the generated bindings (no muse_acp module), so
# each import runs as it would alone, without paying an interpreter start per module. That
# interpreter first loads every such module the checked ones import (a first child imports them
# all and names them), and freezes what it holds, so that no child loads those again or has its
# collector walk them: a child's work is its muse_acp modules alone.
_IMPORT_ALONE = """
import gc, importlib, json, os, sys, traceback
import anyio, pydantic, muse_acp_wire.acp, muse_acp_wire.msp


def forked(work, *args):
    \"\"\"What work(*args) returns, run in a child, and whether the child ended well.\"\"\"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            text = work(*args)
        except BaseException:
            os.write(write, traceback.format_exc()[-500:].encode())
            os._exit(1)
        os.write(write, text.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode(errors="replace")
    return text, os.waitpid(pid, 0)[1] == 0


def alone(name):
    importlib.import_module(name)
    return ""


def others():
    for name in sys.argv[1:]:
        try:
            importlib.import_module(name)
        except BaseException:
            pass  # the check proper reports it
    return json.dumps([name for name in sys.modules if name.split(".")[0] != "muse_acp"])


loaded, ok = forked(others)
assert ok, loaded
for name in json.loads(loaded):
    try:
        importlib.import_module(name)
    except BaseException:
        pass  # not importable by name (a module made at run time): its owner loads it
assert not [name for name in sys.modules if name.split(".")[0] == "muse_acp"]
gc.freeze()
failures = {}
for name in sys.argv[1:]:
    text, ok = forked(alone, name)
    if not ok:
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
    assert "muse_acp.agent.sessions.session" in MODULES
    assert "muse_acp.agent.server" in MODULES
    assert "muse_acp.host.client" in MODULES
    assert not subprocess.run(
        [sys.executable, "-c", "import muse_acp.agent"], check=False
    ).returncode


def order_breaches(root: Path, package: str, order: Sequence[str]) -> list[str]:
    """Each import in ``package`` (under ``root``) of a part of it (a subpackage or top-level
    module) that is not below the importer's own part in ``order``, and each part ``order``
    does not name."""
    files = _files(root, package)
    depth = len(package.split("."))
    breaches = []
    for name, path in files.items():
        part = name.split(".")[depth] if name != package else None
        if part is not None and part not in order:
            breaches.append(f"{name} is in {part}, which the order does not name")
            continue
        for target in mentioned(name, path, path.stem == "__init__"):
            if part is None or not target.startswith(f"{package}."):
                continue
            other = target.split(".")[depth]
            if other != part and other in order and order.index(other) > order.index(part):
                breaches.append(f"{name} imports {target}, which is above it")
    return sorted(set(breaches))


def test_each_package_imports_only_packages_below_it() -> None:
    assert order_breaches(RUNTIME, AGENT, ORDER) == []


def _fake_agent(root: Path, high_import: str) -> None:
    for folder, text in {
        "fake/__init__.py": "",
        "fake/low/__init__.py": '"""Low."""\n',
        "fake/low/base.py": high_import,
        "fake/high/__init__.py": '"""High."""\n',
        "fake/high/top.py": "from fake.low.base import x\n",
    }.items():
        (root / folder).parent.mkdir(parents=True, exist_ok=True)
        (root / folder).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    "high_import",
    [
        "from fake.high.top import y\n",
        "from fake.high import top\n",
        "import fake.high.top\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fake.high.top import y\n",
        "def later() -> None:\n    from ..high import top\n",
    ],
    ids=["from-module", "from-package", "import", "type-only", "deferred-relative"],
)
def test_the_order_check_fails_when_a_lower_package_imports_a_higher_one(
    tmp_path: Path, high_import: str
) -> None:
    _fake_agent(tmp_path, "x = 1\n")
    assert order_breaches(tmp_path, "fake", ("low", "high")) == []
    _fake_agent(tmp_path, high_import)
    assert order_breaches(tmp_path, "fake", ("low", "high")) != []


def test_the_order_check_fails_on_a_package_the_order_does_not_name(tmp_path: Path) -> None:
    _fake_agent(tmp_path, "x = 1\n")
    assert order_breaches(tmp_path, "fake", ("low",)) != []


def _parts() -> set[str]:
    """The agent's subpackages and top-level modules, as they are on disk."""
    found = {path.stem for path in AGENT_FOLDER.glob("*.py")}
    found |= {path.name for path in AGENT_FOLDER.glob("*/__init__.py") for path in [path.parent]}
    return found - {"__init__"}


def test_the_order_names_each_part_of_the_agent_once() -> None:
    assert len(set(ORDER)) == len(ORDER)
    assert set(ORDER) == _parts()


def test_no_folder_of_the_agent_holds_too_many_modules() -> None:
    folders = [AGENT_FOLDER, *(path.parent for path in AGENT_FOLDER.glob("*/__init__.py"))]
    counts = {
        folder.name: len([path for path in folder.glob("*.py") if path.stem != "__init__"])
        for folder in folders
    }
    assert {name: count for name, count in counts.items() if count > MAX_MODULES} == {}


@pytest.mark.parametrize("part", [part for part in ORDER if (AGENT_FOLDER / part).is_dir()])
def test_each_package_states_its_contract_and_runs_no_code(part: str) -> None:
    tree = ast.parse((AGENT_FOLDER / part / "__init__.py").read_text(encoding="utf-8"))
    assert ast.get_docstring(tree)
    assert not [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]


def test_the_architecture_page_gives_the_same_order() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    paragraph = page[page.index("- **`muse_acp.agent`**") :].split("\n- ")[0]
    named = [name for name in re.findall(r"`([a-z_]+)`", paragraph) if name in ORDER]
    assert named == list(ORDER)
