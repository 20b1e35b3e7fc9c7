"""Envelope encoding: member order, omitted params, models and raw JSON spliced in."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field
from pydantic_core import to_json

from muse_acp.rpc import (
    Payload,
    RawJson,
    RequestId,
    RpcError,
    encode_error,
    encode_message,
    encode_notification,
    encode_request,
    encode_result,
    encode_value,
)


class Update(BaseModel):
    session_id: str = Field(alias="sessionId")
    title: str | None = None
    count: int = 0


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        pytest.param(
            encode_request(1, "session/new", {"cwd": "/w"}),
            b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}',
            id="request",
        ),
        pytest.param(
            encode_request("a-1", "model/list"),
            b'{"jsonrpc":"2.0","id":"a-1","method":"model/list"}',
            id="request-without-params",
        ),
        pytest.param(
            encode_notification("session/update", {"x": [1, 2.5, None, True]}),
            b'{"jsonrpc":"2.0","method":"session/update","params":{"x":[1,2.5,null,true]}}',
            id="notification",
        ),
        pytest.param(
            encode_notification("initialized"),
            b'{"jsonrpc":"2.0","method":"initialized"}',
            id="notification-without-params",
        ),
        pytest.param(
            encode_result(7, None),
            b'{"jsonrpc":"2.0","id":7,"result":null}',
            id="null-result",
        ),
        pytest.param(
            encode_result("r", {"stopReason": "end_turn"}),
            b'{"jsonrpc":"2.0","id":"r","result":{"stopReason":"end_turn"}}',
            id="result",
        ),
        pytest.param(
            encode_error(None, RpcError.parse_error()),
            b'{"jsonrpc":"2.0","id":null,"error":'
            b'{"code":-32700,"message":"frame is not valid JSON"}}',
            id="error-without-id",
        ),
        pytest.param(
            encode_error(3, RpcError.method_not_found("x/y")),
            b'{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"unknown method x/y",'
            b'"data":{"method":"x/y"}}}',
            id="error-with-data",
        ),
    ],
)
def test_envelopes_are_compact_and_in_protocol_member_order(frame: bytes, expected: bytes) -> None:
    assert frame == expected


def test_models_are_dumped_by_alias_without_unset_members() -> None:
    update = Update(sessionId="s-1", title=None)
    assert encode_value(update) == b'{"sessionId":"s-1","title":null}'
    assert (
        encode_result(2, update)
        == b'{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1","title":null}}'
    )


def test_raw_json_is_spliced_in_unchanged() -> None:
    raw = RawJson(b'{"b": 1, "a": 2}')
    assert (
        encode_notification("n", raw) == b'{"jsonrpc":"2.0","method":"n","params":{"b": 1, "a": 2}}'
    )


def test_raw_json_of_an_encoders_output_is_the_same_value_spliced_in_the_same_way() -> None:
    data = to_json({"text": "line\nnext\r"})
    raw = RawJson.encoded(data)
    assert raw == RawJson(data)
    assert encode_notification("n", raw) == b'{"jsonrpc":"2.0","method":"n","params":' + data + b"}"


@pytest.mark.parametrize("data", [b'{"a":\n1}', b'{"a":1}\r'])
def test_raw_json_refuses_line_breaks(data: bytes) -> None:
    with pytest.raises(ValueError, match="line breaks"):
        RawJson(data)


def test_text_stays_utf8_and_line_breaks_inside_strings_are_escaped() -> None:
    frame = encode_message({"text": "é → 漢\nnext"})
    assert frame == '{"text":"é → 漢\\nnext"}'.encode()
    assert b"\n" not in frame


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {"x": float("-inf")}])
def test_non_finite_numbers_are_refused(value: Payload) -> None:
    with pytest.raises(ValueError, match="JSON compliant"):
        encode_value(value)


@pytest.mark.parametrize("request_id", [0, -5, 2**40, "", "ü"])
def test_request_ids_round_trip(request_id: RequestId) -> None:
    assert json.loads(encode_request(request_id, "m"))["id"] == request_id
