"""``muse-acp install`` / ``uninstall`` on Zed's and JetBrains' settings, as a user runs them.

The golden files under tests/fixtures/editors are a Zed ``settings.json`` with comments,
trailing commas and other agents, a JetBrains ``acp.json``, and each file as it must read after
``install``: only muse-acp's entry differs, byte for byte.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import assume, given, settings, strategies as st
from typer.testing import CliRunner

from muse_acp.cli_commands import app
from muse_acp.editors import jsonc
from muse_acp.editors.commands import run_install, run_uninstall
from muse_acp.editors.install import BACKUP_SUFFIX, installed, uninstalled
from muse_acp.editors.targets import Editor, Launch, launch, settings_path

FIXTURES: Final = Path(__file__).resolve().parent / "fixtures" / "editors"
HOW: Final = Launch("/opt/muse-acp/bin/muse-acp", ("serve",))
"""The launch the golden files were written for."""
ENV: Final = {"MUSE_ACP_MUSE_BIN": "/usr/local/bin/muse"}
CASES: Final[list[tuple[Editor, str, str]]] = [
    ("zed", "zed-settings.jsonc", "zed-settings.installed.jsonc"),
    ("jetbrains", "jetbrains-acp.json", "jetbrains-acp.installed.json"),
]


def fixture(tmp_path: Path, name: str) -> Path:
    copy = tmp_path / name
    copy.write_bytes((FIXTURES / name).read_bytes())
    return copy


def install(path: Path, editor: Editor = "zed", **options: Any) -> tuple[int, str]:
    said = io.StringIO()
    status = run_install(
        editor,
        settings=path,
        name=options.pop("name", "Muse Code"),
        how=options.pop("how", HOW),
        out=said,
        err=said,
        **options,
    )
    return status, said.getvalue()


def uninstall(path: Path, editor: Editor = "zed", **options: Any) -> tuple[int, str]:
    said = io.StringIO()
    status = run_uninstall(editor, settings=path, name="Muse Code", out=said, err=said, **options)
    return status, said.getvalue()


@pytest.mark.parametrize(("editor", "original", "golden"), CASES)
def test_install_twice_changes_only_our_entry_and_keeps_a_backup(
    tmp_path: Path, editor: Editor, original: str, golden: str
) -> None:
    path = fixture(tmp_path, original)
    status, said = install(path, editor, env=ENV)
    assert status == 0, said
    assert path.read_bytes() == (FIXTURES / golden).read_bytes()
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    assert backup.read_bytes() == (FIXTURES / original).read_bytes()
    assert str(backup) in said

    backup.unlink()
    status, said = install(path, editor, env=ENV)
    assert (status, said) == (0, f"Nothing to change in {path}.\n")
    assert path.read_bytes() == (FIXTURES / golden).read_bytes()
    assert not backup.exists()


@pytest.mark.parametrize(("editor", "original", "golden"), CASES)
def test_uninstall_restores_the_rest_byte_for_byte(
    tmp_path: Path, editor: Editor, original: str, golden: str
) -> None:
    path = fixture(tmp_path, golden)
    assert uninstall(path, editor)[0] == 0
    assert path.read_bytes() == (FIXTURES / original).read_bytes()
    assert uninstall(path, editor) == (0, f"Nothing to change in {path}.\n")


def test_dry_run_prints_the_change_as_a_diff_and_changes_nothing(tmp_path: Path) -> None:
    path = fixture(tmp_path, "zed-settings.jsonc")
    before = path.stat()
    status, said = install(path, env=ENV, dry_run=True)
    assert status == 0
    assert path.read_bytes() == (FIXTURES / "zed-settings.jsonc").read_bytes()
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zed-settings.jsonc"]
    lines = said.splitlines()
    assert lines[:2] == [f"--- {path}", f"+++ {path}"]
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    removed = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    golden = (FIXTURES / "zed-settings.installed.jsonc").read_text().splitlines()
    assert removed == ["    } // the built-in one"]
    assert added == golden[golden.index("    }, // the built-in one") :][:9]
    assert lines[-1] == f"(--dry-run: {path} was not changed)"

    installed = fixture(tmp_path, "zed-settings.installed.jsonc")
    assert uninstall(installed, dry_run=True)[0] == 0
    assert installed.read_bytes() == (FIXTURES / "zed-settings.installed.jsonc").read_bytes()


def test_an_update_changes_what_we_own_and_keeps_what_the_user_added(tmp_path: Path) -> None:
    path = fixture(tmp_path, "zed-settings.installed.jsonc")
    text = path.read_text().replace(
        '"args": ["serve"],', '"args": ["serve"],\n      "default_mode": "plan",'
    )
    path.write_text(text)
    moved = Launch("/home/ada/.local/bin/muse-acp", ("serve",))
    assert install(path, how=moved)[0] == 0
    after = path.read_text()
    assert after == text.replace(HOW.command, moved.command)
    # Without --env, the entry's environment stays; with it, it is replaced.
    assert install(path, how=moved, env={"MUSE_ACP_LOG": "debug"})[0] == 0
    entry = jsonc.parse(path.read_text()).value["agent_servers"]["Muse Code"]
    assert entry["env"] == {"MUSE_ACP_LOG": "debug"}
    assert entry["default_mode"] == "plan"


def test_a_missing_file_is_created_owner_only_and_a_kept_one_keeps_its_mode(
    tmp_path: Path,
) -> None:
    new = tmp_path / "config" / "zed" / "settings.json"
    assert install(new, env=ENV)[0] == 0
    assert stat.S_IMODE(new.stat().st_mode) == 0o600
    assert jsonc.parse(new.read_text()).value == {
        "agent_servers": {
            "Muse Code": {"type": "custom", "command": HOW.command, "args": ["serve"], "env": ENV}
        }
    }
    kept = fixture(tmp_path, "jetbrains-acp.json")
    kept.chmod(0o640)
    assert install(kept, "jetbrains")[0] == 0
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640


def test_a_linked_settings_file_stays_a_link(tmp_path: Path) -> None:
    # Settings kept in a dotfiles repository and linked into place.
    target = fixture(tmp_path, "zed-settings.jsonc")
    link = tmp_path / "settings.json"
    link.symlink_to(target)
    assert install(link, env=ENV)[0] == 0
    assert link.is_symlink()
    assert target.read_bytes() == (FIXTURES / "zed-settings.installed.jsonc").read_bytes()


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "theme": "x"\n  "vim_mode": true\n}\n', "line 3, column 3: expected , or }"),
        ('{\n  "a": 1 /* never closed\n}\n', "line 2, column 10: a /* comment is never closed"),
        ('{"agent_servers": []}', '"agent_servers" in'),
        ("[1, 2]", "does not hold a JSON object"),
    ],
)
def test_a_file_we_cannot_understand_is_left_alone_with_where_it_went_wrong(
    tmp_path: Path, text: str, where: str
) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    status, said = install(path)
    assert status == 1
    assert where in said
    assert said.startswith(f"muse-acp: {path}") or said.startswith('muse-acp: "agent_servers"')
    assert path.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_an_object_holding_only_comments_gets_the_entry_after_them(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    original = '// mine\n{\n  // nothing yet\n  "agent_servers": {\n    // none\n  }\n}\n'
    path.write_text(original)
    assert install(path, env={})[0] == 0
    assert path.read_text() == (
        '// mine\n{\n  // nothing yet\n  "agent_servers": {\n    // none\n    "Muse Code": {\n'
        '      "type": "custom",\n      "command": "/opt/muse-acp/bin/muse-acp",\n'
        '      "args": ["serve"],\n      "env": {}\n    }\n  }\n}\n'
    )
    assert uninstall(path)[0] == 0
    assert path.read_text() == original


def test_comment_marks_inside_strings_are_text() -> None:
    text = '{"url": "https://a.invalid//x/*y*/", // a comment\n "n": [1, 2,],}'
    assert jsonc.parse(text).value == {"url": "https://a.invalid//x/*y*/", "n": [1, 2]}


def test_the_editors_own_settings_files_are_found() -> None:
    home = Path("/home/ada")
    assert settings_path("jetbrains", {}, home) == home / ".jetbrains" / "acp.json"
    assert settings_path("zed", {}, home, "linux") == home / ".config/zed/settings.json"
    xdg = {"XDG_CONFIG_HOME": "/cfg"}
    assert settings_path("zed", xdg, home, "linux") == Path("/cfg/zed/settings.json")
    flatpak = {"FLATPAK_XDG_CONFIG_HOME": "/fp", **xdg}
    assert settings_path("zed", flatpak, home, "linux") == Path("/fp/zed/settings.json")
    # A relative XDG_CONFIG_HOME is ignored, as the XDG rules say.
    assert settings_path("zed", {"XDG_CONFIG_HOME": "cfg"}, home, "linux").is_relative_to(home)
    assert settings_path("zed", xdg, home, "darwin") == home / ".config/zed/settings.json"
    windows = settings_path("zed", {"APPDATA": "/appdata"}, home, "win32")
    assert windows == Path("/appdata/Zed/settings.json")


def test_the_entry_runs_this_installation_by_absolute_path(tmp_path: Path) -> None:
    here = launch()
    assert Path(here.command).is_absolute()
    assert Path(here.command) == Path(sys.executable).parent / "muse-acp"
    assert here.args == ("serve",)
    # An interpreter with no launcher beside it runs the module.
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.symlink_to(sys.executable)
    assert launch(str(python)) == Launch(str(python), ("-m", "muse_acp", "serve"))


def test_the_command_line_finds_zeds_file_and_refuses_bad_input(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    env.pop("FLATPAK_XDG_CONFIG_HOME", None)
    done = subprocess.run(
        [sys.executable, "-m", "muse_acp", "install", "zed", "--env", "MUSE_ACP_LOG=info"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = tmp_path / "cfg" / "zed" / "settings.json"
    entry = jsonc.parse(written.read_text()).value["agent_servers"]["Muse Code"]
    assert entry["command"] == launch().command
    assert entry["env"] == {"MUSE_ACP_LOG": "info"}
    assert "Restart Zed" in done.stdout

    runner = CliRunner()
    bad = runner.invoke(app, ["install", "zed", "--settings", str(written), "--env", "NOPE"])
    assert bad.exit_code == 2
    assert "NAME=VALUE" in bad.output
    assert runner.invoke(app, ["install", "vim"]).exit_code == 2
    gone = runner.invoke(app, ["uninstall", "zed", "--settings", str(written)])
    assert gone.exit_code == 0, gone.output
    assert jsonc.parse(written.read_text()).value == {}


def test_jetbrains_mcp_flags_are_written_into_our_entry_only(tmp_path: Path) -> None:
    path = fixture(tmp_path, "jetbrains-acp.installed.json")
    runner = CliRunner()
    args = ["install", "jetbrains", "--settings", str(path), "--custom-mcp", "--no-idea-mcp"]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    document = jsonc.parse(path.read_text()).value
    ours = document["agent_servers"].pop("Muse Code")
    assert (ours["use_custom_mcp"], ours["use_idea_mcp"]) == (True, False)
    before = jsonc.parse((FIXTURES / "jetbrains-acp.installed.json").read_text()).value
    before["agent_servers"].pop("Muse Code")
    assert document == before  # the file's default_mcp_settings and other agents untouched
    refused = runner.invoke(app, ["install", "zed", "--settings", str(path), "--idea-mcp"])
    assert refused.exit_code == 2
    assert "only JetBrains IDEs read them" in refused.output


_GAPS: Final = st.sampled_from(["", " ", "\n", "\n  ", "\t", " // note\n", " /* note */ "])
_SCALARS: Final = st.sampled_from(["1", '"s"', "true", "null", '"a//b/*c*/"', "-2.5e3"])


@st.composite
def _object(draw: st.DrawFn, values: st.SearchStrategy[str], names: str, least: int = 0) -> str:
    """An object as someone writes it: any gaps and comments, maybe a trailing comma."""
    members = [
        f'{draw(_GAPS)}"{names}{i}"{draw(_GAPS)}:{draw(_GAPS)}{draw(values)}'
        for i in range(draw(st.integers(least, 3)))
    ]
    trailing = "," if bool(members) and draw(st.booleans()) else ""
    return "{" + ",".join(members) + trailing + draw(_GAPS) + "}"


_VALUES: Final = st.recursive(_SCALARS, lambda inner: _object(inner, "k"), max_leaves=6)


@st.composite
def _settings(draw: st.DrawFn) -> str:
    """A settings file with other members and maybe other agents (not one without a member,
    whose blanks ``install`` may lay out anew)."""
    body = draw(_object(_VALUES, "k"))[1:-1]
    if draw(st.booleans()):
        agents = draw(_object(_VALUES, "Agent ", least=1))
        servers = f'{draw(_GAPS)}"agent_servers"{draw(_GAPS)}:{draw(_GAPS)}{agents}'
        body = f"{servers},{body}" if body.strip() else servers
    assume('"' in body)
    text = f"{draw(_GAPS)}{{{body}}}{draw(_GAPS)}\n"
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text


@settings(max_examples=300, deadline=None)
@given(_settings(), st.sampled_from(["zed", "jetbrains"]))
def test_install_then_uninstall_gives_any_settings_text_back(text: str, editor: Editor) -> None:
    path = Path("settings.json")
    added = installed(editor, text, path, HOW, ENV, "Muse Code")
    assert installed(editor, added, path, HOW, None, "Muse Code") == added
    document = jsonc.parse(added).value
    assert document["agent_servers"].pop("Muse Code")["env"] == ENV
    if not document["agent_servers"]:
        del document["agent_servers"]
    assert document == jsonc.parse(text).value
    assert uninstalled(added, path, "Muse Code") == text
