"""Defects the robustness suites found, each pinned where it was fixed.

Each test names the behaviour that was wrong: a lone surrogate escape that killed the agent,
deep or huge JSON answered without the request's id, non-UTF-8 text accepted as JSON, an unknown
method or a workspace path echoed at any length, a resource whose blob vanished, session ids of
the wrong shape reaching Muse or answered "unknown session", and a host's failure kind carried
unredacted.
"""

from __future__ import annotations

from typing import Any

import pytest

from muse_acp.agent.errors.failures import stop_reason
from muse_acp.agent.errors.workspace import check_workspace
from muse_acp.agent.sessions.session import SessionRegistry, check_session_id
from muse_acp.agent.translation.prompt_params import PROMPT_PARAMS
from muse_acp.rpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
    RpcError,
)
from muse_acp.rpc.decoding import MAX_NESTING_DEPTH, RefusedFrame, decode_frame
from muse_acp_wire import msp


def refusal(frame: bytes) -> RefusedFrame:
    decoded = decode_frame(frame)
    assert isinstance(decoded, RefusedFrame), decoded
    return decoded


def nested(depth: int) -> bytes:
    return b"[" * depth + b"0" + b"]" * depth


@pytest.mark.parametrize(
    ("frame", "request_id"),
    [
        pytest.param(b'{"jsonrpc":"2.0","id":4,"method":"\\ud800"}', 4, id="method"),
        pytest.param(b'{"jsonrpc":"2.0","id":"\\udc00","method":"m"}', None, id="id"),
        pytest.param(b'{"jsonrpc":"2.0","id":5,"method":"m","params":{"\\udfff":1}}', 5, id="key"),
    ],
)
def test_a_lone_surrogate_escape_is_refused_before_anything_tries_to_encode_it(
    frame: bytes, request_id: int | None
) -> None:
    # It used to reach the error encoder, whose UnicodeEncodeError ended the agent.
    refused = refusal(frame)
    assert (refused.error.code, refused.request_id, refused.answer) == (
        INVALID_REQUEST,
        request_id,
        True,
    )


def test_a_surrogate_pair_escape_is_an_ordinary_character() -> None:
    assert decode_frame(b'{"text":"\\ud83d\\ude00"}') == {"text": "\U0001f600"}


DEEP = nested(5000)
REQUEST_HEAD = b'{"jsonrpc":"2.0","id":7,"method":"m","params":'


@pytest.mark.parametrize(
    ("frame", "request_id", "answer"),
    [
        pytest.param(REQUEST_HEAD + DEEP + b"}", 7, True, id="params-last"),
        pytest.param(b'{"params":' + DEEP + b',"method":"m","id":"x"}', "x", True, id="id-last"),
        pytest.param(REQUEST_HEAD + nested(MAX_NESTING_DEPTH) + b"}", 7, True, id="just-over"),
        pytest.param(REQUEST_HEAD + b"9" * 5000 + b"}", 7, True, id="digits"),
        pytest.param(
            b'{"jsonrpc":"2.0","method":"m","params":' + DEEP + b"}", None, False, id="note"
        ),
        pytest.param(
            b'{"jsonrpc":"2.0","id":9,"result":' + DEEP + b"}", None, False, id="response"
        ),
        pytest.param(nested(100_000), None, True, id="array"),
        pytest.param(
            REQUEST_HEAD + b'{"a":' * 1_200_000 + b"0" + b"}" * 1_200_001,
            7,
            True,
            id="beyond-the-scan-budget",
        ),
    ],
)
def test_json_beyond_the_limits_is_refused_with_the_requests_own_id(
    frame: bytes, request_id: object, answer: bool
) -> None:
    # Deep frames used to be answered PARSE_ERROR with id null, so the request went unanswered.
    refused = refusal(frame)
    assert (refused.error.code, refused.request_id, refused.answer) == (
        INVALID_REQUEST,
        request_id,
        answer,
    )


def test_json_at_the_nesting_limit_is_accepted() -> None:
    frame = b'{"p":' + nested(MAX_NESTING_DEPTH - 1) + b"}"
    assert not isinstance(decode_frame(frame), RefusedFrame)


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(b"\xef\xbb\xbf{}", id="utf8-bom"),
        pytest.param('{"a":1}'.encode("utf-16-le"), id="utf16"),
        pytest.param(b'{"a":NaN}', id="nan"),
        pytest.param(b'{"a":-Infinity}', id="infinity"),
        pytest.param(b"[" * 100_000, id="deep-and-unterminated"),
        pytest.param(b'{"id":1,"p":' + b"[" * 5000 + b"}", id="deep-and-unbalanced"),
    ],
)
def test_text_that_is_not_strict_utf8_json_is_a_parse_error(frame: bytes) -> None:
    # json.loads on bytes used to guess UTF-16/32 and skip a BOM, and it accepts NaN.
    refused = refusal(frame)
    assert (refused.error.code, refused.request_id) == (PARSE_ERROR, None)


def test_an_unknown_method_is_quoted_back_only_in_part() -> None:
    error = RpcError.method_not_found("x" * 100_000)
    assert error.code == METHOD_NOT_FOUND
    assert len(error.message) < 300
    assert isinstance(error.data, dict)
    assert len(str(error.data["method"])) < 300


@pytest.mark.parametrize("cwd", ["x" * 100_000, "/" + "x" * 100_000])
def test_a_workspace_path_is_quoted_back_only_in_part(cwd: str) -> None:
    # Both refusals used to quote the whole path: a 100 kB cwd made a 100 kB error.
    with pytest.raises(RpcError) as raised:
        check_workspace(cwd, None)
    assert raised.value.code == INVALID_PARAMS
    assert len(raised.value.message) < 500


def _with_resource(resource: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "resource", "resource": resource}
    return {
        "sessionId": "s",
        "expectedTurnId": "t",
        "prompt": [{"type": "text", "text": "see"}, block],
    }


@pytest.mark.parametrize("method", sorted(PROMPT_PARAMS))
def test_a_resource_carrying_text_and_blob_is_refused_rather_than_losing_its_blob(
    method: str,
) -> None:
    # Validation picked the text variant and dropped the blob, so the refusal never happened.
    params = _with_resource({"uri": "file:///a", "text": "t", "blob": "AAAA"})
    with pytest.raises(RpcError) as raised:
        PROMPT_PARAMS[method].model_validate(params, by_alias=True, by_name=False)
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message.startswith("prompt block 2 (resource):")


@pytest.mark.parametrize("method", sorted(PROMPT_PARAMS))
def test_resources_carrying_one_of_text_or_blob_still_validate(method: str) -> None:
    for resource in ({"uri": "u", "text": "t"}, {"uri": "u", "blob": "AAAA"}):
        model = PROMPT_PARAMS[method].model_validate(
            _with_resource(resource), by_alias=True, by_name=False
        )
        assert len(model.model_dump(by_alias=True)["prompt"]) == 2


@pytest.mark.parametrize("session_id", ["ok\n", "../x", "/abs", "a/b", "", "x" * 129, "a\x00"])
def test_a_session_id_of_the_wrong_shape_is_invalid_params_everywhere(session_id: str) -> None:
    # "ok\n" passed the check ("$" matches before a final newline), and methods that look up an
    # open session answered such ids RESOURCE_NOT_FOUND instead of refusing them.
    with pytest.raises(RpcError) as checked:
        check_session_id(session_id)
    with pytest.raises(RpcError) as required:
        SessionRegistry().require(session_id)
    assert (checked.value.code, required.value.code) == (INVALID_PARAMS, INVALID_PARAMS)


def test_a_well_formed_unknown_session_id_is_still_resource_not_found() -> None:
    with pytest.raises(RpcError) as raised:
        SessionRegistry().require("01a22b75-6f81-7000-a188-ff0fae977377")
    assert raised.value.code == RESOURCE_NOT_FOUND


def test_a_host_failure_kind_is_redacted_like_its_message(monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "muse-acp-canary-kind-0123456789"
    monkeypatch.setenv("META_API_KEY", canary)
    kind = f"Bearer token-0123456789 https://u:pw-0123456789@h/?api_key=k-0123456789 {canary}"
    params = msp.TurnCompletedParams.model_validate(
        {
            "sessionId": "s",
            "viewCursor": "v:s:1",
            "turnId": "t",
            "terminal": "failed",
            "error": {"kind": kind, "message": f"failed: {kind}", "retryable": False},
        }
    )
    error = stop_reason(params)
    assert isinstance(error, RpcError)
    assert isinstance(error.data, dict)
    failure = error.data["failure"]
    assert isinstance(failure, dict)
    carried = f"{error.message} {failure['kind']}"
    for secret in ("token-0123456789", "pw-0123456789", "k-0123456789", canary):
        assert secret not in carried
    assert "[redacted]" in str(failure["kind"])
