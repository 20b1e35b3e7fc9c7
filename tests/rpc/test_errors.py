"""The error type, its wire form, and the one exception-to-error mapper."""

from __future__ import annotations

import logging
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from muse_acp.rpc import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
    ConnectionClosed,
    JsonValue,
    RpcError,
    describe_validation_error,
    error_from_exception,
)

FORBIDDEN_ON_THE_WIRE = ("validation error", "pydantic", "input_value", "https://", "Traceback")


def test_codes_have_their_protocol_values() -> None:
    assert (PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR) == (
        -32700,
        -32600,
        -32601,
        -32602,
        -32603,
    )
    assert (REQUEST_CANCELLED, AUTH_REQUIRED, RESOURCE_NOT_FOUND) == (-32800, -32000, -32002)


@pytest.mark.parametrize(
    ("error", "code", "data"),
    [
        (RpcError.parse_error(), PARSE_ERROR, None),
        (RpcError.invalid_request("bad"), INVALID_REQUEST, None),
        (RpcError.method_not_found("x/y"), METHOD_NOT_FOUND, {"method": "x/y"}),
        (RpcError.invalid_params("bad", {"f": 1}), INVALID_PARAMS, {"f": 1}),
        (RpcError.internal_error(), INTERNAL_ERROR, None),
        (RpcError.request_cancelled(), REQUEST_CANCELLED, None),
        (RpcError(AUTH_REQUIRED, "sign in"), AUTH_REQUIRED, None),
        (RpcError(RESOURCE_NOT_FOUND, "gone", {"id": "s"}), RESOURCE_NOT_FOUND, {"id": "s"}),
    ],
)
def test_constructors_set_code_and_data(error: RpcError, code: int, data: JsonValue) -> None:
    assert (error.code, error.data) == (code, data)
    assert error.message


def test_wire_form_omits_absent_data_and_round_trips() -> None:
    assert RpcError(-1, "m").to_object() == {"code": -1, "message": "m"}
    error = RpcError(-32042, "no boundary", {"kind": "noBoundary", "anchor": None})
    rebuilt = RpcError.from_object(error.to_object())
    assert (rebuilt.code, rebuilt.message, rebuilt.data) == (error.code, error.message, error.data)


@pytest.mark.parametrize(
    "wire",
    [None, "oops", [1], {}, {"code": "1", "message": "m"}, {"code": True, "message": "m"}],
)
def test_a_malformed_peer_error_becomes_an_internal_error(wire: JsonValue) -> None:
    assert RpcError.from_object(wire).code == INTERNAL_ERROR


def test_a_peer_error_without_message_keeps_its_code() -> None:
    error = RpcError.from_object({"code": -32011})
    assert (error.code, error.message) == (-32011, "")


def test_mapper_passes_rpc_errors_through_unchanged() -> None:
    error = RpcError(RESOURCE_NOT_FOUND, "gone")
    assert error_from_exception(error, method="m") is error


def test_a_closed_connection_is_no_peer_error() -> None:
    # Code that handles a peer's refusal must never catch a peer that simply went away.
    assert not isinstance(ConnectionClosed(), RpcError)


def test_mapper_answers_a_closed_connection_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="muse_acp.rpc"):
        error = error_from_exception(ConnectionClosed("host gone"), method="session/prompt")
    assert error.code == INTERNAL_ERROR
    assert "closed" in error.message
    assert "session/prompt" in error.message
    assert "Traceback" not in caplog.text


def test_mapper_hides_unexpected_exceptions_and_logs_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    try:
        raise KeyError("secret-token-123")
    except KeyError as exc:
        with caplog.at_level(logging.ERROR, logger="muse_acp.rpc"):
            error = error_from_exception(exc, method="session/prompt")
    assert error.to_object() == {"code": INTERNAL_ERROR, "message": "internal error"}
    assert "session/prompt" in caplog.text
    assert "secret-token-123" in caplog.text
    assert caplog.records[0].exc_info is not None


class Text(BaseModel):
    type: Literal["text"]
    text: str


class Image(BaseModel):
    type: Literal["image"]
    data: str
    mime_type: str = Field(alias="mimeType")


class TaggedPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(alias="sessionId")
    prompt: list[Annotated[Text | Image, Field(discriminator="type")]]
    env: dict[str, str] = {}


class PlainPrompt(BaseModel):
    session_id: str = Field(alias="sessionId")
    prompt: list[Text | Image]
    limit: int | str = 1


def validation_error(model: type[BaseModel], data: JsonValue) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data, by_alias=True, by_name=False)
    return caught.value


TEXT = {"type": "text", "text": "hi"}


@pytest.mark.parametrize(
    ("model", "data", "expected"),
    [
        (TaggedPrompt, {"prompt": []}, "sessionId is required"),
        (TaggedPrompt, {"sessionId": 5, "prompt": []}, "sessionId has the wrong type"),
        (
            TaggedPrompt,
            {"sessionId": "s", "prompt": [TEXT, {"type": "video"}]},
            "prompt[1].type is not a supported value",
        ),
        (TaggedPrompt, {"sessionId": "s", "prompt": [{"text": "x"}]}, "prompt[0].type is required"),
        (
            TaggedPrompt,
            {"sessionId": "s", "prompt": [{"type": "text", "text": 5}]},
            "prompt[0].text has the wrong type",
        ),
        (
            TaggedPrompt,
            {"sessionId": "s", "prompt": [{"type": "image", "data": "x"}]},
            "prompt[0].mimeType is required",
        ),
        (TaggedPrompt, {"sessionId": "s", "prompt": [], "extra": 1}, "extra is not allowed"),
        (TaggedPrompt, {"sessionId": "s", "prompt": "x"}, "prompt has the wrong type"),
        (
            TaggedPrompt,
            {"sessionId": "s", "prompt": [], "env": {"PATH": 1}},
            "env.PATH has the wrong type",
        ),
        (
            PlainPrompt,
            {"sessionId": "s", "prompt": [{"type": "image", "data": "x"}]},
            "prompt[0].mimeType is required",
        ),
        (
            PlainPrompt,
            {"sessionId": "s", "prompt": [{"type": "video"}]},
            "prompt[0].type is not a supported value",
        ),
        (
            PlainPrompt,
            {"sessionId": "s", "prompt": [{"type": "text", "text": 5}]},
            "prompt[0].text has the wrong type",
        ),
        (PlainPrompt, {"sessionId": "s", "prompt": [], "limit": [1]}, "limit has the wrong type"),
        (PlainPrompt, {"sessionId": "s", "prompt": [], "limit": 1.5}, "limit is invalid"),
    ],
)
def test_validation_failures_name_the_wire_path_in_our_own_words(
    model: type[BaseModel], data: JsonValue, expected: str
) -> None:
    exc = validation_error(model, data)
    assert describe_validation_error(exc, data) == expected
    mapped = error_from_exception(exc, method="session/prompt", params=data)
    assert mapped.to_object() == {
        "code": INVALID_PARAMS,
        "message": f"invalid params for session/prompt: {expected}",
    }
    for forbidden in FORBIDDEN_ON_THE_WIRE:
        assert forbidden not in mapped.message


@pytest.mark.parametrize(
    ("model", "data", "expected"),
    [
        (TaggedPrompt, {"prompt": []}, "sessionId is required"),
        (
            PlainPrompt,
            {"sessionId": "s", "prompt": [{"type": "image", "data": "x"}]},
            "prompt[0].mimeType is required",
        ),
        (
            TaggedPrompt,
            {"sessionId": "s", "prompt": [{"type": "video"}]},
            "prompt[0].type is not a supported value",
        ),
    ],
)
def test_validation_failures_are_described_without_the_input_too(
    model: type[BaseModel], data: JsonValue, expected: str
) -> None:
    exc = validation_error(model, data)
    assert describe_validation_error(exc) == expected
    assert error_from_exception(exc, method=None).message == f"invalid params: {expected}"


def test_validation_messages_never_echo_values_and_stay_short() -> None:
    secret = "sk-" + "9" * 50
    long_key = "k" * 5000
    data: JsonValue = {"sessionId": secret, "prompt": [{"type": secret}], long_key: 1}
    exc = validation_error(TaggedPrompt, data)
    message = error_from_exception(exc, method="m", params=data).message
    assert secret not in message
    assert len(message) < 300
