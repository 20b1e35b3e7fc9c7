"""The ``sim:`` directive language and the way the fake model splits its text."""

from __future__ import annotations

import pytest

from muse_acp.sim.asks import split_stages
from muse_acp.sim.directives import (
    MAX_STREAM_DELTAS,
    Approve,
    AskUser,
    Crash,
    Fail,
    Hold,
    Plan,
    Prompt,
    Search,
    Shell,
    Stream,
    WebSearch,
    parse_prompt,
)
from muse_acp.sim.turn import split_text


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
