"""Decoding incoming frames: the fast parse gives exactly the strict decoder's answer, value or
refusal, whatever the bytes, for small frames and for large ones alike."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from hypothesis import given, settings, strategies as st

from muse_acp.rpc.decoding import (
    MAX_INTEGER_DIGITS,
    MAX_NESTING_DEPTH,
    RefusedFrame,
    _decode_strictly,
    decode_frame,
)

LARGE: Final = b" " * 5000
"""Leading whitespace that makes any frame too large to count as plain."""

JSON_VALUES: Any = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**30, max_value=10**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)

TOKENS = [
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b",",
    b":",
    b"0",
    b"7",
    b"-",
    b".",
    b"e",
    b"E",
    b"+",
    b"true",
    b"false",
    b"null",
    b"NaN",
    b"Infinity",
    b" ",
    b"\t",
    b"\\",
    b"/",
    b"\x01",
    b"\xc3\xa9",
    b"\xff",
    b"\xef\xbb\xbf",
    b'"id"',
    b'"method"',
    b"a",
]


def _shape(value: Any) -> Any:
    """``value`` with every scalar paired with its type, so 1, 1.0 and True differ."""
    if isinstance(value, dict):
        return {key: _shape(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_shape(child) for child in value]
    if isinstance(value, float):
        return (float, repr(value))
    return (type(value), value)


def _outcome(decoded: object) -> Any:
    if isinstance(decoded, RefusedFrame):
        error = decoded.error
        return ("refused", error.code, error.message, decoded.request_id, decoded.answer)
    return ("value", _shape(decoded))


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.booleans(), st.booleans())
def test_a_json_text_decodes_to_its_value_as_the_strict_decoder_reads_it(
    value: Any, ascii_only: bool, large: bool
) -> None:
    frame = (LARGE if large else b"") + json.dumps(value, ensure_ascii=ascii_only).encode()
    assert _outcome(decode_frame(frame)) == _outcome(_decode_strictly(frame))
    assert _outcome(decode_frame(frame)) == ("value", _shape(value))


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=24), st.booleans())
def test_any_bytes_get_the_strict_decoders_answer(tokens: list[bytes], large: bool) -> None:
    frame = (LARGE if large else b"") + b"".join(tokens)
    assert _outcome(decode_frame(frame)) == _outcome(_decode_strictly(frame))


def _request_carrying(params: bytes, large: bool = True) -> bytes:
    frame = b'{"jsonrpc":"2.0","id":3,"method":"m","params":[%s]}' % params
    return LARGE + frame if large else frame


@pytest.mark.parametrize(
    "params",
    [
        b"9" * (MAX_INTEGER_DIGITS + 1),
        b"-" + b"9" * (MAX_INTEGER_DIGITS + 1),
        b"9" * 5000,
        b"[" * MAX_NESTING_DEPTH + b"]" * MAX_NESTING_DEPTH,
        b"[" * 500 + b"]" * 500,
        b'"\\ud800"',
        b'"\\udc00 after"',
    ],
    ids=[
        "1001 digits",
        "-1001 digits",
        "5000 digits",
        "one level too deep",
        "500 deep",
        "a lone high surrogate",
        "a lone low surrogate",
    ],
)
@pytest.mark.parametrize("large", [True, False], ids=["large", "small"])
def test_a_frame_past_a_limit_is_refused_as_the_strict_decoder_refuses_it(
    params: bytes, large: bool
) -> None:
    frame = _request_carrying(params, large)
    refused = decode_frame(frame)
    assert isinstance(refused, RefusedFrame)
    assert (refused.request_id, refused.answer) == (3, True)
    assert _outcome(refused) == _outcome(_decode_strictly(frame))


@pytest.mark.parametrize("large", [True, False], ids=["large", "small"])
def test_a_frame_just_within_the_limits_is_decoded(large: bool) -> None:
    depth = MAX_NESTING_DEPTH - 2  # the frame and its params array are two levels
    params = b"9" * MAX_INTEGER_DIGITS + b"," + b"[" * depth + b"]" * depth
    decoded = decode_frame(_request_carrying(params, large))
    assert isinstance(decoded, dict)
    params_read = decoded["params"]
    assert isinstance(params_read, list)
    assert params_read[0] == int("9" * MAX_INTEGER_DIGITS)


def test_a_too_long_integer_in_a_small_frame_is_still_refused() -> None:
    frame = b'{"jsonrpc":"2.0","id":3,"method":"m","params":[%s]}' % (
        b"9" * (MAX_INTEGER_DIGITS + 1)
    )
    refused = decode_frame(frame)
    assert isinstance(refused, RefusedFrame)
    assert (refused.request_id, refused.answer) == (3, True)
    assert "digits" in refused.error.message


MANY_VALUES: Final = b",".join(b'{"n":%d,"s":"v"}' % n for n in range(300))
"""A frame's worth of small values, with more containers than the depth limit."""


@pytest.mark.parametrize(
    "params",
    [
        b"9" * (MAX_INTEGER_DIGITS + 1),
        b"[" * MAX_NESTING_DEPTH + b"]" * MAX_NESTING_DEPTH,
        b'"\\ud800"',
    ],
    ids=["1001 digits", "one level too deep", "a lone high surrogate"],
)
def test_a_limit_is_found_after_many_values(params: bytes) -> None:
    frame = _request_carrying(MANY_VALUES + b"," + params, large=False)
    refused = decode_frame(frame)
    assert isinstance(refused, RefusedFrame)
    assert (refused.request_id, refused.answer) == (3, True)
    assert _outcome(refused) == _outcome(_decode_strictly(frame))


def test_digits_and_brackets_inside_strings_after_many_values_are_text() -> None:
    text = "9" * 2000 + "[" * 300
    params = MANY_VALUES + b',"%s"' % text.encode()
    decoded = decode_frame(_request_carrying(params, large=False))
    assert isinstance(decoded, dict)
    params_read = decoded["params"]
    assert isinstance(params_read, list)
    assert (len(params_read), params_read[-1]) == (301, text)


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    text = "[{" * 200
    frame = b'{"jsonrpc":"2.0","method":"m","params":{"text":"%s"}}' % text.encode()
    decoded = decode_frame(frame)
    assert isinstance(decoded, dict)
    assert decoded["params"] == {"text": text}
