"""The failures of approvals and questions: answers the client or the session's mode could not
give, and requests the host sent in a form that cannot be answered.

Contract: each function returns the ``RpcError`` of one such failure, built with
``failures.Failure`` (kind, source, retryability, the ``running`` phase), in words of our own
that say what happened and what to do; host and client text in them is bounded.
``client_result`` reads a client's answer as its model or says, as a ``ValueError``, why it is
not one; ``client_words`` tells a client's error as the client's. Pure.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from muse_acp.agent.errors.failures import Failure, sentence
from muse_acp.rpc import describe_validation_error
from muse_acp.rpc.errors import RpcError
from muse_acp.rpc.jsonvalue import JsonValue

__all__ = [
    "answer_refused",
    "automatic_unavailable",
    "client_answer_failed",
    "client_result",
    "client_words",
    "unreadable_ask",
    "user_input_unsupported",
]


M = TypeVar("M", bound=BaseModel)


def client_result(model: type[M], raw: JsonValue, method: str) -> M:
    """The client's result as ``model``, or a ``ValueError`` in words of our own."""
    try:
        return model.model_validate(raw, by_alias=True, by_name=False)
    except ValidationError as error:
        detail = describe_validation_error(error, raw)
        raise ValueError(f"the answer to {method} is not a valid result ({detail})") from None


def client_words(error: RpcError) -> str:
    """A client's error, told as the client's (its message is client text: bounded)."""
    message = " ".join(error.message.split())[:200] or "no message"
    return f"the client answered with error {error.code} ({message})"


_POLICY_WORDS: Final[MappingProxyType[Literal["approve", "reject"], tuple[str, str]]] = (
    MappingProxyType(
        {"approve": ("approve", "one-time allow"), "reject": ("reject", "one-time deny")}
    )
)


def automatic_unavailable(policy: Literal["approve", "reject"]) -> RpcError:
    """The session's mode answers approvals itself, but Muse offered no choice it may pick."""
    verb, choice = _POLICY_WORDS[policy]
    failure = Failure(
        "automaticDecisionUnavailable",
        "adapter",
        retryable=False,
        phase="running",
    )
    return failure.error(
        f"This session's mode answers approvals automatically ({verb}), but Muse offered no "
        f"{choice} choice for this action, so the turn was stopped without answering. Switch "
        "the session to the Ask mode to decide such approvals yourself."
    )


def user_input_unsupported() -> RpcError:
    """Muse asked the user a question, but the client cannot show elicitation forms."""
    failure = Failure(
        "userInputUnsupported",
        "client",
        retryable=False,
        phase="running",
    )
    return failure.error(
        "Muse asked a question that needs an answer, but this ACP client did not advertise "
        "form elicitation, so the question was withdrawn and Muse then ended the turn. Use a "
        "client that supports elicitation forms to answer Muse's questions."
    )


_ASKED_WORDS: Final[MappingProxyType[Literal["permission", "question"], str]] = MappingProxyType(
    {
        "permission": "No permission decision could be obtained from the client",
        "question": "No usable answer to Muse's question could be obtained from the client",
    }
)


def client_answer_failed(asked: Literal["permission", "question"], reason: str) -> RpcError:
    """The client's answer to a permission request or a question could not be used."""
    kind = "permissionFailed" if asked == "permission" else "questionFailed"
    failure = Failure(kind, "client", retryable=True, phase="running")
    outcome = (
        "The turn was stopped without granting permission"
        if asked == "permission"
        else "The question was withdrawn from Muse, which then ended the turn"
    )
    return failure.error(
        f"{_ASKED_WORDS[asked]}: {sentence(reason)} {outcome}; send the prompt again to retry."
    )


def answer_refused(
    asked: Literal["permission", "question"], error: ValueError | RpcError
) -> RpcError:
    """The client's answer, refused by muse-acp itself: ``error`` says why in our words (an
    ``RpcError`` that carries data is already the whole failure)."""
    if isinstance(error, ValueError):
        return client_answer_failed(asked, str(error))
    if error.data is not None:
        return error
    why = f"muse-acp could not use the client's answer, because {error.message}"
    return client_answer_failed(asked, why)


_ASK_WORDS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {"approval/requested": "an approval", "userInput/requested": "a question"}
)


def unreadable_ask(method: str, detail: str) -> RpcError:
    """The host asked for an approval or a question in a form that cannot be answered."""
    failure = Failure("unreadableRequest", "host", retryable=True, phase="running")
    asked = _ASK_WORDS.get(method, "an answer")
    return failure.error(
        f"Muse asked for {asked}, but its request cannot be answered ({sentence(detail, 300)}), "
        "so the turn was stopped rather than left waiting for an answer that cannot be given. "
        "Send the prompt again; if this repeats, check that this Muse version is supported "
        "(muse-acp doctor)."
    )
