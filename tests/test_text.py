"""Bounded text: one marker, never more than the limit, never a split character."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from muse_acp.text import ELLIPSIS, clip, cut_utf8, one_line, quoted, utf8_size


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 10, "short"),
        ("exactly10!", 10, "exactly10!"),
        ("abcdefghijklmnopqrstuvwxyz", 15, "abcdefghijklmn" + ELLIPSIS),
        ("abcdefghijklmnopqrstuvwxyz", 1, ELLIPSIS),
        ("abc", 0, ""),
    ],
)
def test_clip_keeps_text_within_its_limit(text: str, limit: int, expected: str) -> None:
    assert clip(text, limit) == expected
    assert len(clip(text, limit)) <= limit


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("one\ntwo\t three", 50, "one two three"),
        ("word " * 10, 12, "word word w" + ELLIPSIS),
        ("  \n ", 10, ""),
    ],
)
def test_one_line_folds_whitespace_then_clips(text: str, limit: int, expected: str) -> None:
    assert one_line(text, limit) == expected


def test_quoted_bounds_a_peers_value_before_quoting_it() -> None:
    assert quoted("x" * 100, 10) == repr("x" * 9 + ELLIPSIS)
    assert quoted(["a", "b"], 5) == "['a'" + ELLIPSIS


@given(st.text(max_size=200), st.integers(min_value=0, max_value=300))
def test_a_utf8_cut_is_a_whole_character_prefix_within_the_limit(text: str, limit: int) -> None:
    kept, cut = cut_utf8(text, limit)
    assert text.startswith(kept)
    assert utf8_size(kept) <= limit or not cut
    assert cut == (kept != text)


def test_every_cut_uses_the_one_marker() -> None:
    for shortened in (clip("x" * 50, 10), one_line("x " * 50, 10), quoted("x" * 50, 10)):
        assert ELLIPSIS in shortened
        assert "[truncated]" not in shortened


def test_clip_refuses_a_negative_limit() -> None:
    with pytest.raises(ValueError, match="negative"):
        clip("text", -1)
