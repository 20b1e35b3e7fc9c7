"""The ``sim:`` directive language and the way the fake model splits its text."""

from __future__ import annotations

import pytest

from muse_acp.sim.model.asks import split_stages
from muse_acp.sim.options.quirks import QUIRKS
from muse_acp.sim.options.versions import HOST_VERSIONS
from muse_acp.sim.script.directives import (
    DIRECTIVE_NAMES,
    MAX_PACED_LINES,
    MAX_STREAM_DELTAS,
    Approve,
    AskUser,
    Crash,
    Edit,
    Fail,
    Hold,
    Paced,
    Plan,
    Prompt,
    ProtectedWrite,
    Search,
    Shell,
    Spawn,
    Stream,
    WebSearch,
    parse_prompt,
    split_text,
)
from muse_acp.sim.script.session_directives import Gap, Name, ViewLost, slug

from .captures import REPO_ROOT


def test_directive_lines_are_taken_out_of_the_prompt_in_order() -> None:
    prompt = parse_prompt(
        "Please look.\n"
        "sim:bash 12\n"
        "  sim:binary 3\n"
        "sim:unavailable 0\n"
        "sim:search foo bar\n"
        "sim:web weather today\n"
        "sim:approve rm -rf build\n"
        "sim:stages 2 make && make test\n"
        "sim:ask\n"
        "sim:hold\n"
        "sim:plan\n"
        "sim:fail modelError\n"
        "sim:crash\n"
        "Thanks."
    )
    assert prompt == Prompt(
        "Please look.\nThanks.",
        (
            Shell(12, "text"),
            Shell(3, "binary"),
            Shell(0, "unavailable"),
            Search("foo bar"),
            WebSearch("weather today"),
            Approve("rm -rf build", 1),
            Approve("make && make test", 2),
            AskUser(),
            Hold(),
            Plan(),
            Fail("modelError"),
            Crash(),
        ),
    )


@pytest.mark.parametrize(
    "line",
    [
        "sim:bash",
        "sim:bash -1",
        "sim:bash 1e3",
        "sim:stages 0 ls",
        "sim:stages 2",
        "sim:ask now",
        "sim:teleport",
        "sim:",
        "simulate:bash 3",
        "sim:search",
    ],
)
def test_lines_that_do_not_parse_stay_prompt_text(line: str) -> None:
    assert parse_prompt(line) == Prompt(line, ())


def test_text_is_split_at_word_boundaries_into_at_most_four_deltas() -> None:
    pieces = split_text("one two three four five six seven")
    assert pieces == ["one two ", "three four ", "five six ", "seven"]
    assert split_text("single") == ["single"]
    assert split_text("") == []
    assert "".join(split_text("a  b\nc ")) == "a  b\nc "


def test_staged_commands_split_at_command_separators() -> None:
    assert split_stages("echo a && ls; pwd", 3) == [["echo", "a"], ["ls"], ["pwd"]]
    assert split_stages("make", 2) == [["make"], ["make"]]
    assert split_stages('echo "unbalanced', 1) == [["echo", '"unbalanced']]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("sim:stream 1", Stream(1)),
        ("sim:stream 20000", Stream(20_000)),
        (f"sim:stream {MAX_STREAM_DELTAS}", Stream(MAX_STREAM_DELTAS)),
        ("sim:stream 0", None),
        (f"sim:stream {MAX_STREAM_DELTAS + 1}", None),
        ("sim:stream", None),
        ("sim:stream ²", None),
        ("sim:stream 1000000000000", None),
    ],
)
def test_a_stream_directive_takes_a_bounded_delta_count(line: str, expected: Stream | None) -> None:
    directives = parse_prompt(line).directives
    assert directives == ((expected,) if expected is not None else ())


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("sim:paced 4 3", Paced(4, 3.0)),
        ("sim:paced 1 0.25", Paced(1, 0.25)),
        (f"sim:paced {MAX_PACED_LINES} 3600", Paced(MAX_PACED_LINES, 3600.0)),
        ("sim:paced 0 1", None),
        (f"sim:paced {MAX_PACED_LINES + 1} 1", None),
        ("sim:paced 3 3601", None),
        ("sim:paced 3", None),
        ("sim:paced 3 -1", None),
    ],
)
def test_a_paced_directive_takes_a_bounded_line_count_and_duration(
    line: str, expected: Paced | None
) -> None:
    directives = parse_prompt(line).directives
    assert directives == ((expected,) if expected is not None else ())


def test_the_simulator_page_names_every_version_directive_and_quirk() -> None:
    section = (REPO_ROOT / "docs" / "muse-sim.md").read_text(encoding="utf-8")
    for version in HOST_VERSIONS:
        assert version in section
    for name in DIRECTIVE_NAMES:
        assert f"`sim:{name}" in section or f", `sim:{name}" in section, name
    for quirk in QUIRKS:
        assert f"`{quirk}`" in section


def test_the_directives_of_the_newer_hosts_parse() -> None:
    prompt = parse_prompt(
        "sim:stagerace ls; pwd; id\n"
        "sim:protected .git/config\n"
        "sim:protected-bare a b.txt\n"
        "sim:gap 3\n"
        "sim:spawn 2.5\n"
        "sim:name Fix the Login bug!\n"
        "sim:viewlost"
    )
    assert prompt == Prompt(
        "",
        (
            Approve("ls; pwd; id", 3, race=True),
            ProtectedWrite(".git/config"),
            ProtectedWrite("a b.txt", bare=True),
            Gap(3),
            Spawn("2.5"),
            Name("Fix the Login bug!"),
            ViewLost(),
        ),
    )
    assert Name("Fix the Login bug!").slug == "fix-the-login-bug"


@pytest.mark.parametrize(
    "line",
    [
        "sim:stagerace",
        "sim:protected",
        "sim:gap 0",
        "sim:gap 1001",
        "sim:gap x",
        "sim:spawn",
        "sim:spawn -1",
        "sim:spawn 1e3",
        "sim:spawn 3601",
        "sim:name",
        "sim:name !!!",
        "sim:viewlost now",
    ],
)
def test_newer_directives_that_do_not_parse_stay_prompt_text(line: str) -> None:
    assert parse_prompt(line) == Prompt(line, ())


def test_names_become_slugs() -> None:
    assert slug("Héllo  Wörld -- 42") == "hello-world-42"
    assert slug("-" * 3 + "a" * 100) == "a" * 64
    assert slug("...") == ""


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("sim:edit notes.txt beta BETA", Edit("notes.txt", "beta", "BETA")),
        ("sim:edit  a.py   x=1  x=2 ", Edit("a.py", "x=1", "x=2")),
        ("sim:edit notes.txt beta", None),
        ("sim:edit notes.txt a b c", None),
        ("sim:edit", None),
    ],
)
def test_an_edit_directive_takes_a_path_and_two_words(line: str, expected: Edit | None) -> None:
    directives = parse_prompt(line).directives
    assert directives == ((expected,) if expected is not None else ())
