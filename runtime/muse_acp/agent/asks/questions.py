"""Muse's questions to the user as ACP form elicitations, and the form's answers back.

Contract: ``elicitation_request`` turns one ``userInput/requested`` into a form-mode
``elicitation/create`` with one required field per question, keyed by the question id: a
string enum for a single choice, a string-array enum for a multiple choice, and bounded free
text when the question offers no options. ``answers_from_response`` accepts only answers that
fit those fields (offered labels, selection counts, text length), so what is sent in
``userInput/answer`` is always something the host asked for. Pure functions.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final, Literal, TypeAlias

from muse_acp.text import clip, quoted
from muse_acp_wire import acp, msp

__all__ = [
    "FREE_TEXT_LIMIT",
    "CancelKind",
    "answers_from_response",
    "elicitation_request",
    "user_input_cancel_reason",
    "withdrawn_notice",
]

CancelKind: TypeAlias = Literal["declined", "unsupported", "invalid"]

FREE_TEXT_LIMIT: Final = 500
"""Longest free-text answer the host accepts."""

META_USER_INPUT: Final = "muse/userInput"
_VALUE_SHOWN: Final = 80
_OPTIONS_SHOWN: Final = 240

_CANCEL_REASONS: Final[MappingProxyType[CancelKind, str]] = MappingProxyType(
    {
        "declined": "the user chose not to answer in the ACP client",
        "unsupported": "the ACP client cannot show question forms",
        "invalid": "the ACP client sent answers that do not fit the questions",
    }
)

PropertySchema: TypeAlias = acp.StringElicitationPropertySchema | acp.ArrayElicitationPropertySchema


def user_input_cancel_reason(kind: CancelKind) -> str:
    """The ``reason`` sent with ``userInput/cancel`` when the adapter gives up on a question."""
    return _CANCEL_REASONS[kind]


def withdrawn_notice(params: msp.UserInputRequestedParams, detail: str) -> str:
    """What the chat says when a question could not be put to the user or answered: which
    question, why (``detail``, a sentence about the client), and what happens next."""
    first = params.questions[0].question if params.questions else "a question"
    return (
        f"[Muse asked {quoted(first, _VALUE_SHOWN)}, but {detail.rstrip('.')}. The question was "
        "withdrawn; Muse decides whether the turn goes on without an answer.]"
    )


def _labels(question: msp.UserInputQuestion) -> list[str]:
    return [option.label for option in question.options or []]


def _options_help(question: msp.UserInputQuestion) -> str | None:
    # The form model has no per-value descriptions, so they are listed in the field's help.
    lines = [
        f"{option.label}: {option.description}"
        for option in question.options or []
        if option.description
    ]
    return "\n".join(lines) or None


def _property(question: msp.UserInputQuestion) -> PropertySchema:
    labels = _labels(question)
    title = question.question
    if not labels:
        return acp.StringElicitationPropertySchema(
            type="string", title=title, max_length=FREE_TEXT_LIMIT
        )
    schema: PropertySchema
    if question.selection.mode == "single":
        schema = acp.StringElicitationPropertySchema(type="string", title=title, enum=labels)
    else:
        items = acp.ElicitationStringItems(type="string", enum=labels)
        schema = acp.ArrayElicitationPropertySchema(type="array", title=title, items=items)
        # Assigned only when the host sets them, so that unset bounds stay off the wire.
        if question.selection.min_selections is not None:
            schema.min_items = question.selection.min_selections
        if question.selection.max_selections is not None:
            schema.max_items = question.selection.max_selections
    description = _options_help(question)
    if description is not None:
        schema.description = description
    return schema


def _message(question: msp.UserInputQuestion) -> str:
    return f"{question.header}: {question.question}" if question.header else question.question


def elicitation_request(
    session_id: str, params: msp.UserInputRequestedParams, *, tool_call_id: str | None = None
) -> acp.CreateElicitationRequest:
    """Build the form-mode ``elicitation/create`` params that put ``params``' questions.

    ``tool_call_id`` names the ACP tool call the question belongs to; it defaults to the
    host's ``toolCallId``.
    """
    schema = acp.ElicitationSchema(
        type="object",
        properties={question.id: _property(question) for question in params.questions},
        required=[question.id for question in params.questions],
    )
    return acp.CreateElicitationRequest(
        session_id=session_id,
        tool_call_id=params.tool_call_id if tool_call_id is None else tool_call_id,
        mode="form",
        message="\n".join(_message(question) for question in params.questions),
        requested_schema=schema,
        field_meta={
            META_USER_INPUT: {"userInputId": params.user_input_id, "turnId": params.turn_id}
        },
    )


def _shown(value: object) -> str:
    return quoted(value, _VALUE_SHOWN)


def _offered(question: msp.UserInputQuestion) -> str:
    return clip(repr(_labels(question)), _OPTIONS_SHOWN)


def _single(question: msp.UserInputQuestion, value: object) -> msp.UserInputAnswer:
    if not isinstance(value, str) or value not in _labels(question):
        raise ValueError(
            f"the answer to question {question.id!r} must be one of its options "
            f"{_offered(question)}, got {_shown(value)}"
        )
    return msp.UserInputAnswer(question_id=question.id, selected_label=value)


def _multiple(question: msp.UserInputQuestion, value: object) -> msp.UserInputAnswer:
    labels = _labels(question)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(
            f"the answer to question {question.id!r} must be a list of its options, "
            f"got {_shown(value)}"
        )
    chosen: list[str] = list(value)
    unknown = [item for item in chosen if item not in labels]
    if unknown:
        raise ValueError(
            f"the answer to question {question.id!r} picks {_shown(unknown)}, which it does "
            f"not offer; its options are {_offered(question)}"
        )
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"the answer to question {question.id!r} picks an option twice")
    low = question.selection.min_selections or 0
    high = question.selection.max_selections or len(labels)
    if not low <= len(chosen) <= high:
        raise ValueError(
            f"the answer to question {question.id!r} picks {len(chosen)} options; it takes "
            f"between {low} and {high}"
        )
    return msp.UserInputAnswer(question_id=question.id, selected_labels=chosen)


def _free_text(question: msp.UserInputQuestion, value: object) -> msp.UserInputAnswer:
    if not isinstance(value, str):
        raise ValueError(
            f"the answer to question {question.id!r} must be text, got {_shown(value)}"
        )
    if len(value) > FREE_TEXT_LIMIT:
        raise ValueError(
            f"the answer to question {question.id!r} is {len(value)} characters long; "
            f"Muse accepts at most {FREE_TEXT_LIMIT}"
        )
    return msp.UserInputAnswer(question_id=question.id, free_text=value)


def _answer(question: msp.UserInputQuestion, value: object) -> msp.UserInputAnswer:
    if not _labels(question):
        return _free_text(question, value)
    if question.selection.mode == "single":
        return _single(question, value)
    return _multiple(question, value)


def answers_from_response(
    params: msp.UserInputRequestedParams, response: acp.CreateElicitationResponse
) -> list[msp.UserInputAnswer] | None:
    """Return one answer per question for an accepted form, or None when it was not accepted.

    Fields the form did not ask for are ignored.

    Raises:
        ValueError: an answer is missing or does not fit its question; the message says which.
    """
    if response.action != "accept":
        return None
    content = response.content or {}
    answers: list[msp.UserInputAnswer] = []
    for question in params.questions:
        if question.id not in content:
            raise ValueError(f"the form answer has no value for question {question.id!r}")
        answers.append(_answer(question, content[question.id]))
    return answers
