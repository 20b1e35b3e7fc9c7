"""Muse's questions become ACP form elicitations, and only fitting answers go back to Muse."""

from __future__ import annotations

import re
from typing import Any

import acp.schema as sdk
import pytest

from muse_acp.agent.asks.questions import (
    FREE_TEXT_LIMIT,
    answers_from_response,
    elicitation_request,
    user_input_cancel_reason,
)
from muse_acp_wire import acp, msp

DATABASE = {
    "id": "db",
    "header": "Database",
    "question": "Which database should the service use?",
    "selection": {"mode": "single"},
    "options": [
        {"label": "Postgres", "description": "Matches the other services."},
        {"label": "SQLite"},
    ],
}
FEATURES = {
    "id": "features",
    "question": "Which features should ship first?",
    "selection": {"mode": "multiple", "minSelections": 1, "maxSelections": 2},
    "options": [{"label": "Search"}, {"label": "Export"}, {"label": "Sharing"}],
}
NAME = {
    "id": "name",
    "header": "Name",
    "question": "What should it be called?",
    "selection": {"mode": "single"},
}


def _params(*questions: dict[str, Any]) -> msp.UserInputRequestedParams:
    return msp.UserInputRequestedParams.model_validate(
        {
            "sessionId": "host-session",
            "userInputId": "input-1",
            "turnId": "turn-1",
            "itemId": "input-1",
            "toolCallId": "call-1",
            "toolName": "request_user_input",
            "viewCursor": "v:host-session:3",
            "questions": list(questions),
        }
    )


def _wire(request: acp.CreateElicitationRequest) -> dict[str, Any]:
    """The request's JSON, checked to round-trip and to be read alike by the official SDK."""
    raw = request.model_dump(mode="json", by_alias=True, exclude_unset=True)
    again = acp.CreateElicitationRequest.model_validate(raw)
    assert again.model_dump(mode="json", by_alias=True, exclude_unset=True) == raw
    oracle = sdk.CreateFormSessionElicitationRequest.model_validate(raw)
    assert oracle.model_dump(mode="json", by_alias=True, exclude_unset=True) == raw
    return raw


def test_every_kind_of_question_becomes_one_required_form_field() -> None:
    raw = _wire(elicitation_request("acp-session", _params(DATABASE, FEATURES, NAME)))
    assert raw == {
        "sessionId": "acp-session",
        "toolCallId": "call-1",
        "mode": "form",
        "message": (
            "Database: Which database should the service use?\n"
            "Which features should ship first?\n"
            "Name: What should it be called?"
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "db": {
                    "type": "string",
                    "title": "Which database should the service use?",
                    "description": "Postgres: Matches the other services.",
                    "enum": ["Postgres", "SQLite"],
                },
                "features": {
                    "type": "array",
                    "title": "Which features should ship first?",
                    "minItems": 1,
                    "maxItems": 2,
                    "items": {"type": "string", "enum": ["Search", "Export", "Sharing"]},
                },
                "name": {
                    "type": "string",
                    "title": "What should it be called?",
                    "maxLength": FREE_TEXT_LIMIT,
                },
            },
            "required": ["db", "features", "name"],
        },
        "_meta": {"muse/userInput": {"userInputId": "input-1", "turnId": "turn-1"}},
    }


def test_a_multiple_choice_without_bounds_sets_none() -> None:
    question = {**FEATURES, "selection": {"mode": "multiple"}}
    field = _wire(elicitation_request("s", _params(question)))["requestedSchema"]["properties"]
    assert field["features"] == {
        "type": "array",
        "title": "Which features should ship first?",
        "items": {"type": "string", "enum": ["Search", "Export", "Sharing"]},
    }


def test_the_tool_call_can_be_named_by_the_caller() -> None:
    raw = _wire(elicitation_request("s", _params(NAME), tool_call_id="acp-tool-9"))
    assert raw["toolCallId"] == "acp-tool-9"


def _accept(content: dict[str, Any] | None) -> acp.CreateElicitationResponse:
    return acp.CreateElicitationResponse(action="accept", content=content)


def _dump(answers: list[msp.UserInputAnswer] | None) -> list[dict[str, Any]] | None:
    if answers is None:
        return None
    return [a.model_dump(mode="json", by_alias=True, exclude_unset=True) for a in answers]


def test_accepted_answers_become_one_host_answer_per_question() -> None:
    content = {"db": "SQLite", "features": ["Export", "Search"], "name": "atlas", "extra": 1}
    answers = answers_from_response(_params(DATABASE, FEATURES, NAME), _accept(content))
    assert _dump(answers) == [
        {"questionId": "db", "selectedLabel": "SQLite"},
        {"questionId": "features", "selectedLabels": ["Export", "Search"]},
        {"questionId": "name", "freeText": "atlas"},
    ]


def test_free_text_of_exactly_the_limit_is_accepted() -> None:
    answers = answers_from_response(_params(NAME), _accept({"name": "n" * FREE_TEXT_LIMIT}))
    assert _dump(answers) == [{"questionId": "name", "freeText": "n" * FREE_TEXT_LIMIT}]


VALID: dict[str, Any] = {"db": "Postgres", "features": ["Search"], "name": "atlas"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(
            {**VALID, "db": "MySQL"},
            "the answer to question 'db' must be one of its options ['Postgres', 'SQLite'], "
            "got 'MySQL'",
            id="a label that was not offered",
        ),
        pytest.param(
            {**VALID, "db": ["Postgres"]},
            "the answer to question 'db' must be one of its options ['Postgres', 'SQLite'], "
            "got ['Postgres']",
            id="a list for a single choice",
        ),
        pytest.param(
            {**VALID, "features": ["Search", "Export", "Sharing"]},
            "the answer to question 'features' picks 3 options; it takes between 1 and 2",
            id="too many selections",
        ),
        pytest.param(
            {**VALID, "features": []},
            "the answer to question 'features' picks 0 options; it takes between 1 and 2",
            id="too few selections",
        ),
        pytest.param(
            {**VALID, "features": ["Search", "Teleport"]},
            "the answer to question 'features' picks ['Teleport'], which it does not offer; "
            "its options are ['Search', 'Export', 'Sharing']",
            id="a multiple choice with a label that was not offered",
        ),
        pytest.param(
            {**VALID, "features": ["Search", "Search"]},
            "the answer to question 'features' picks an option twice",
            id="the same label twice",
        ),
        pytest.param(
            {**VALID, "features": "Search"},
            "the answer to question 'features' must be a list of its options, got 'Search'",
            id="a string for a multiple choice",
        ),
        pytest.param(
            {**VALID, "name": "n" * (FREE_TEXT_LIMIT + 1)},
            "the answer to question 'name' is 501 characters long; Muse accepts at most 500",
            id="free text that is too long",
        ),
        pytest.param(
            {**VALID, "name": 42},
            "the answer to question 'name' must be text, got 42",
            id="free text that is not text",
        ),
        pytest.param(
            {"features": ["Search"], "name": "atlas"},
            "the form answer has no value for question 'db'",
            id="a missing answer",
        ),
        pytest.param(None, "the form answer has no value for question 'db'", id="no content"),
    ],
)
def test_answers_that_do_not_fit_their_question_are_refused(
    content: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        answers_from_response(_params(DATABASE, FEATURES, NAME), _accept(content))


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_declined_or_cancelled_form_gives_no_answers(action: str) -> None:
    response = acp.CreateElicitationResponse.model_validate({"action": action})
    assert answers_from_response(_params(DATABASE), response) is None


def test_a_long_refused_value_is_shown_shortened() -> None:
    with pytest.raises(ValueError, match="must be one of its options") as caught:
        answers_from_response(_params(DATABASE), _accept({"db": "x" * 10_000}))
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("declined", "the user chose not to answer in the ACP client"),
        ("unsupported", "the ACP client cannot show question forms"),
        ("invalid", "the ACP client sent answers that do not fit the questions"),
    ],
)
def test_cancel_reasons(kind: Any, reason: str) -> None:
    assert user_input_cancel_reason(kind) == reason
