"""README as a newcomer uses it: the first two commands, and editor snippets that work as pasted."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from muse_acp.client import connect

ROOT: Final = Path(__file__).resolve().parents[1]
README: Final = (ROOT / "README.md").read_text(encoding="utf-8")
BIN: Final = Path(sys.executable).parent

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
    with anyio.fail_after(60):
        async with connect([str(command), *entry["args"]], env=env, cwd=str(tmp_path)) as agent:
            session = await agent.new_session(str(tmp_path))
            assert session.modes is not None
            offered = [mode.id for mode in session.modes.available_modes]
    assert entry["default_mode"] in offered
    mentioned = re.findall(r"`(\w+)`", README[README.index("`default_mode` picks") :][:300])
    assert set(offered) <= set(mentioned)
