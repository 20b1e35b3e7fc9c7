"""Finding a result's string member as the peer spelled it, or knowing it cannot be proven."""

from __future__ import annotations

import pytest
from pydantic_core import from_json

from muse_acp.rpc.decoding import decode_frame
from muse_acp.rpc.splice import (
    MAX_ESCAPED_QUOTES,
    MAX_NAME_CANDIDATES,
    MAX_WHITESPACE,
    result_string_token,
)


def _token(frame: bytes, key: str = "content") -> bytes | None:
    message = decode_frame(frame)
    assert isinstance(message, dict), "the table holds frames the decoder accepts"
    return result_string_token(frame, message["result"], key)


FOUND = [
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"content":"abc","eof":true}}', b'"abc"', id="first"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"eof":true,"content":"a\\nb","byteLen":3}}',
        b'"a\\nb"',
        id="middle, with an escaped line break",
    ),
    pytest.param(
        b'{"id":1,"result":{"eof":true,"content":"abc"},"jsonrpc":"2.0"}', b'"abc"', id="last"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{ "content" :\t"x y" }}', b'"x y"', id="spaces"
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"content":"say \\"hi\\\\\\" there\\\\"}}',
        b'"say \\"hi\\\\\\" there\\\\"',
        id="escaped quotes and backslashes",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"content":"caf\\u00e9 \\/ \\u0041"}}',
        b'"caf\\u00e9 \\/ \\u0041"',
        id="escapes our encoder would not write are kept",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"encoding":"content","content":"z"}}',
        b'"z"',
        id="the name as a value first",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"note":"\\"content\\":\\"no\\"","content":"z"}}',
        b'"z"',
        id="the name inside another string",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"_meta":{"content":"nested"},"content":"z"}}',
        b'"z"',
        id="a nested member of that name first",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"content":"z","_meta":{"content":"nested"}}}',
        b'"z"',
        id="a nested member of that name after",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","extra":{"content":"top"},"id":1,"result":{"content":"z"}}',
        b'"z"',
        id="a member of that name outside the result",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"content":"old","content":"new"}}',
        b'"new"',
        id="a repeated name: the one the decoder kept",
    ),
]


@pytest.mark.parametrize(("frame", "expected"), FOUND)
def test_the_members_own_token_is_found_byte_for_byte(frame: bytes, expected: bytes) -> None:
    token = _token(frame)
    assert token == expected
    message = decode_frame(frame)
    assert isinstance(message, dict)
    result = message["result"]
    assert isinstance(result, dict)
    assert from_json(expected) == result["content"]


NOT_PROVEN = [
    pytest.param(b'{"jsonrpc":"2.0","id":1,"result":{"content":""}}', id="empty: nothing to save"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"result":{"content":7}}', id="not a string"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"result":{"text":"abc"}}', id="no such member"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"result":["content"]}', id="result not an object"),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"\\u0063ontent":"abc"}}',
        id="the name spelled with an escape",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"content":"'
        + b'\\"' * (MAX_ESCAPED_QUOTES + 1)
        + b'"}}',
        id="more escaped quotes than are stepped over",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"content":"' + b"\\\\" * 64 + b'\\"x"}}',
        id="a run of backslashes too long to count",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{'
        + b"".join(b'"m%d":{"content":"n"},' % n for n in range(MAX_NAME_CANDIDATES))
        + b'"content":"z"}}',
        id="more candidates than are looked at",
    ),
    pytest.param(
        b'{"jsonrpc":"2.0","id":1,"result":{"content"' + b" " * (MAX_WHITESPACE + 1) + b':"z"}}',
        id="more whitespace before the colon than is looked through",
    ),
]


@pytest.mark.parametrize("frame", NOT_PROVEN)
def test_what_cannot_be_proven_is_left_to_the_encoder(frame: bytes) -> None:
    assert _token(frame) is None


def test_a_few_escaped_quotes_are_stepped_over() -> None:
    body = b'\\"' * MAX_ESCAPED_QUOTES
    frame = b'{"jsonrpc":"2.0","id":1,"result":{"content":"' + body + b'"}}'
    assert _token(frame) == b'"' + body + b'"'


def test_a_page_sized_member_with_a_line_break_every_few_bytes_is_found() -> None:
    text = b"output-marker\\n" * 75_000
    frame = b'{"jsonrpc":"2.0","id":3,"result":{"content":"' + text + b'","eof":false}}'
    token = _token(frame)
    assert token == b'"' + text + b'"'
