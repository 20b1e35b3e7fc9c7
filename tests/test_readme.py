"""README and the pages it links, as a reader uses them.

README opens with the two commands for a fresh machine, stays short, and its editor snippets work
as pasted. What moved out of it into docs/, CHANGELOG.md and CONTRIBUTING.md is still stated:
every link resolves, and the facts below are checked against the code they describe.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import shlex
import sys
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from typer.testing import CliRunner

from muse_acp import __version__
from muse_acp.agent.commands.commands import BUILTINS
from muse_acp.agent.routes import REQUESTS
from muse_acp.cli_commands import app
from muse_acp.client import connect
from muse_acp.config import Deadlines
from muse_acp.sim.options.accounts import login

ROOT: Final = Path(__file__).resolve().parents[1]
README: Final = (ROOT / "README.md").read_text(encoding="utf-8")
BIN: Final = Path(sys.executable).parent
MAX_README_LINES: Final = 250
DOCS: Final = ROOT / "docs"
PAGES: Final = (
    "architecture",
    "development",
    "features",
    "muse-extensions",
    "muse-sim",
    "performance",
)
"""The pages of docs/ that README's facts moved to, or that a contributor needs."""


def page(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


ZED_CUSTOM_MEMBERS: Final = {
    "type",
    "command",
    "args",
    "env",
    "default_mode",
    "default_model",
    "favorite_models",
    "default_config_options",
    "favorite_config_option_values",
}
"""What Zed accepts in an ``agent_servers`` entry of ``"type": "custom"``."""
JETBRAINS_MEMBERS: Final = {"command", "args", "env", "use_idea_mcp", "use_custom_mcp"}
"""What JetBrains AI Assistant reads from an ``agent_servers`` entry of ``acp.json``."""


def blocks(language: str) -> list[tuple[int, str]]:
    """Fenced code blocks of ``language`` with where they start in README."""
    pattern = rf"^```{language}\n(.*?)^```$"
    return [(m.start(), m.group(1)) for m in re.finditer(pattern, README, re.M | re.S)]


def snippet(heading: str) -> dict[str, Any]:
    """The first JSON block after the bold ``heading``."""
    where = README.index(f"**{heading}**")
    text = next(body for start, body in blocks("json") if start > where)
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def only_entry(document: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    assert list(document) == ["agent_servers"]
    servers: dict[str, dict[str, Any]] = document["agent_servers"]
    assert len(servers) == 1
    return next(iter(servers.items()))


def check_launch(entry: dict[str, Any]) -> None:
    assert isinstance(entry["command"], str)
    assert Path(entry["command"]).name == "muse-acp"
    assert entry["args"] == ["serve"]
    assert isinstance(entry["env"], dict)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in entry["env"].items())
    assert "MUSE_ACP_MUSE_BIN" in entry["env"]


def test_readme_starts_with_two_commands_for_a_fresh_machine() -> None:
    first_heading = README.index("\n## ")
    opening = [body for start, body in blocks("sh") if start < first_heading]
    assert len(opening) == 1
    commands = opening[0].strip().splitlines()
    assert len(commands) == 2
    demo, tests = commands
    assert demo.startswith("python -m pip install ")
    assert demo.endswith("demo")
    assert tests == "python -m pip install nox && nox"
    # CI runs exactly the test command README gives.
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().endswith(tests)
    # The line before says to use a virtual environment, and why.
    intro = README[: README.index("```sh")]
    assert "python -m venv .venv && . .venv/bin/activate" in intro
    assert "refuse" in intro


def test_the_zed_snippet_has_the_shape_zed_reads() -> None:
    name, entry = only_entry(snippet("Zed"))
    assert name
    assert entry["type"] == "custom"
    assert set(entry) <= ZED_CUSTOM_MEMBERS
    check_launch(entry)
    assert isinstance(entry["default_mode"], str)


def test_the_jetbrains_snippet_has_the_shape_jetbrains_reads() -> None:
    where = README.index("**JetBrains IDEs**")
    assert "~/.jetbrains/acp.json" in README[where : where + 200]
    _, entry = only_entry(snippet("JetBrains IDEs"))
    assert set(entry) <= JETBRAINS_MEMBERS
    check_launch(entry)
    assert Path(entry["command"]).is_absolute()
    # The MCP flags JetBrains reads are shown, and what they do with muse-acp is said.
    flags = {"use_idea_mcp", "use_custom_mcp"}
    assert flags <= set(entry)
    assert all(isinstance(entry[flag], bool) for flag in flags)
    after = README[README.index('"use_idea_mcp"', where) :][:900]
    assert all(f"`{flag}`" in after for flag in flags)
    assert "`default_mcp_settings`" in after
    assert "for that session only" in after


def _sh_lines() -> list[str]:
    return [line for _, body in blocks("sh") for line in body.splitlines()]


def test_no_command_block_installs_the_unpublished_package_by_name() -> None:
    # muse-acp is not on PyPI yet: by-name installs are prose for later, never a command to
    # paste; what README gives runs the wheel the build makes.
    by_name = re.compile(r"^(uvx|pipx (run|install)|uv tool install) muse-acp\b")
    assert [line for line in _sh_lines() if by_name.match(line)] == []
    assert re.search(r"not on PyPI\s+yet", README)
    wheel = f"muse_acp-{__version__}-py3-none-any.whl"
    globs = set(re.findall(r"dist/(muse_acp-\*\.whl)", "\n".join(_sh_lines())))
    assert globs
    assert all(fnmatch.fnmatch(wheel, pattern) for pattern in globs)


def test_the_install_commands_readme_gives_run(tmp_path: Path) -> None:
    runner = CliRunner()
    lines = [line for line in _sh_lines() if re.match(r"muse-acp (un)?install ", line)]
    assert {line.split()[1] for line in lines} == {"install", "uninstall"}
    for number, line in enumerate(lines):
        words = shlex.split(
            line.replace('"$(command -v muse)"', "/usr/local/bin/muse"), comments=True
        )
        settings = tmp_path / f"settings-{number}.json"
        settings.write_text("{}\n")
        done = runner.invoke(app, [*words[1:], "--settings", str(settings), "--dry-run"])
        assert done.exit_code == 0, (line, done.output)
        assert settings.read_text() == "{}\n"


def test_the_acpx_section_says_how_to_stop_a_turn() -> None:
    acpx = [line for line in _sh_lines() if line.startswith("acpx ")]
    agents = {line.split(" cancel ")[0] for line in acpx if " cancel " in line}
    assert agents == {"acpx --agent 'muse-acp serve'"}
    assert re.search(r"Ctrl-C stops acpx,\s+not the turn", README)


@pytest.mark.anyio
async def test_the_zed_snippet_starts_an_agent_that_offers_its_default_mode(
    tmp_path: Path,
) -> None:
    _, entry = only_entry(snippet("Zed"))
    command = BIN / entry["command"]
    assert command.is_file(), f"muse-acp is installed as a console script beside {sys.executable}"
    env = {
        **entry["env"],
        "MUSE_ACP_MUSE_BIN": "muse-sim",
        "MUSE_SIM_HOME": str(tmp_path / "sim-home"),
        "MUSE_ACP_DATA_DIR": str(tmp_path / "data"),
    }
    login(tmp_path / "sim-home")  # what `muse-sim login` does, as the README says to run once
    with anyio.fail_after(60):
        async with connect([str(command), *entry["args"]], env=env, cwd=str(tmp_path)) as agent:
            session = await agent.new_session(str(tmp_path))
            assert session.modes is not None
            offered = [mode.id for mode in session.modes.available_modes]
    assert entry["default_mode"] in offered
    mentioned = re.findall(r"`(\w+)`", README[README.index("`default_mode` picks") :][:300])
    assert set(offered) <= set(mentioned)


def test_readme_is_short_and_its_first_code_is_the_two_commands() -> None:
    assert len(README.splitlines()) <= MAX_README_LINES
    first = min(blocks(r"\w*"))
    assert first == blocks("sh")[0]
    assert first[1].splitlines() == [
        "python -m pip install . && python -m muse_acp demo",
        "python -m pip install nox && nox",
    ]


LINK: Final = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", markdown, re.M)}


def local_links(relative: str) -> list[tuple[Path, str]]:
    """Every link of a Markdown file that points into the repository, as (target, anchor)."""
    found = []
    for target in LINK.findall(page(relative)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        found.append(((ROOT / relative).parent / path if path else ROOT / relative, anchor))
    return found


DOCUMENTS: Final = [
    "README.md",
    "CHANGELOG.md",
    "CONTRIBUTING.md",
    *(f"docs/{path.name}" for path in sorted(DOCS.glob("*.md"))),
]


def test_readme_links_the_docs_the_changelog_and_the_contributor_guide() -> None:
    targets = {path.resolve() for path, _ in local_links("README.md")}
    assert {DOCS, ROOT / "CHANGELOG.md", ROOT / "CONTRIBUTING.md"} <= targets
    index = {path.resolve() for path, _ in local_links("docs/README.md")}
    assert {DOCS / f"{name}.md" for name in PAGES} <= index


@pytest.mark.parametrize("relative", DOCUMENTS)
def test_every_link_of_the_documentation_resolves(relative: str) -> None:
    for path, anchor in local_links(relative):
        assert path.exists(), f"{relative} links {path.relative_to(ROOT)}, which does not exist"
        if anchor:
            assert anchor in anchors(path.read_text(encoding="utf-8")), (relative, anchor)


def test_readme_documents_every_setting_with_its_default() -> None:
    table = README[README.index("## Configuration") :]
    table = table[: table.index("\n\n", table.index("| variable"))]
    read = set(re.findall(r'"(MUSE_ACP_[A-Z_]+)"', _runtime_text("muse_acp")))
    assert read
    for variable in read:
        assert f"| `{variable}` |" in table, variable
    for deadline in fields(Deadlines):
        variable = f"MUSE_ACP_{deadline.name.upper()}_TIMEOUT"
        row = next(line for line in table.splitlines() if line.startswith(f"| `{variable}` |"))
        assert row.rstrip(" |").endswith(f"| {deadline.default:g}"), row


def _runtime_text(package: str) -> str:
    folder = ROOT / "runtime" / package.replace(".", "/")
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(folder.rglob("*.py")))


def test_the_simulator_page_documents_every_variable_it_reads() -> None:
    text = page("docs/muse-sim.md")
    read = set(re.findall(r'"(MUSE_SIM_[A-Z_]+)"', _runtime_text("muse_acp.sim")))
    assert read
    for variable in read:
        assert f"`{variable}`" in text, variable


def test_readme_and_features_name_every_local_command() -> None:
    features = page("docs/features.md")
    for name in BUILTINS:
        assert f"`/{name}" in README, name
        assert f"`/{name}" in features, name


def test_the_extensions_page_names_every_extension_method() -> None:
    text = page("docs/muse-extensions.md")
    methods = [binding.method for binding in REQUESTS if binding.method.startswith("_")]
    assert methods
    for method in methods:
        assert f"`{method}" in text, method


def _nox_sessions() -> tuple[list[str], list[str]]:
    """Every nox session, and the ones a bare ``nox`` runs, as noxfile.py declares them."""
    tree = ast.parse(page("noxfile.py"))
    sessions = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(
            ast.unparse(decorator).startswith("nox.session") for decorator in node.decorator_list
        )
    ]
    default = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "nox.options.sessions"
    )
    return sessions, default


def test_the_development_page_describes_every_nox_session_and_codegen_command() -> None:
    text = page("docs/development.md")
    sessions, default = _nox_sessions()
    for name in sessions:
        assert f"| `{name}` |" in text, name
    bare = next(line for line in text.splitlines() if re.match(r"nox +#", line))
    assert set(re.findall(r"\w+", bare.partition("#")[2])) & set(sessions) == set(default)
    assert "coverage" not in default
    commands = re.findall(r'add_parser\("(\w+)"', page("codegen/__main__.py"))
    assert commands
    for command in commands:
        assert f"python -m codegen {command}" in text, command


def test_the_changelog_opens_with_unreleased_then_the_current_version() -> None:
    headings = re.findall(r"^## (.+)$", page("CHANGELOG.md"), re.M)
    assert headings[:2] == ["Unreleased", __version__]


def test_every_ruff_the_checks_run_is_the_pinned_one() -> None:
    project = tomllib.loads(page("pyproject.toml"))
    pins = {
        requirement
        for extra in project["project"]["optional-dependencies"].values()
        for requirement in extra
        if requirement.startswith("ruff")
    }
    assert len(pins) == 1
    (pin,) = pins
    assert f'"{pin}"' in page("noxfile.py")
    hooks = page(".pre-commit-config.yaml")
    assert hooks.count(f'["{pin}"]') == 2
    assert "entry: python -m codegen check" in hooks


def test_readme_gives_no_benchmark_figures() -> None:
    for unit in ("µs", "MiB/s", "updates/s", "deltas/s"):
        assert unit not in README, unit
    assert "µs" in page("docs/performance.md")
