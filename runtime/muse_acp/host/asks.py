"""The host's approvals and questions, read with what they carry.

Contract: an approval (``approval/requested`` and its server-request twin ``approval/request``)
or a question (``userInput/requested``, ``userInput/request``) is something the user must answer
before the turn goes on, so one that lacks a member the bindings require must never be dropped
(a real 1.4.2 host sent protected-write approvals without ``viewCursor``). ``read_ask`` first
reads the params as they are; when that fails it fills the members muse-acp can do without
(view cursor, raw arguments, turn, item and tool call ids, tool name, subject), only where they
are absent, with neutral values, and reads again. When a member needed to answer (the session,
the approval or question id, the current stage and its choices, the questions) is missing or
invalid, the result is an ``UnreadableAsk`` naming the session, the method and what is wrong,
which the session's running turn reports as a clear failure instead of waiting for an answer
nobody can give. An empty ``turnId`` means the host did not say which turn asked. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError

from muse_acp.rpc.validation import describe_validation_error
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = ["ASK_METHODS", "AskParams", "UnreadableAsk", "read_ask"]


class AskParams(BaseModel):
    """The params of an approval or question exactly as the host sent them (an object)."""

    model_config = ConfigDict(extra="allow")

    @property
    def raw(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class UnreadableAsk(WireModel):
    """An approval or question the host sent that muse-acp cannot answer."""

    session_id: str
    method: str
    detail: str
    """What is missing or invalid, in words of our own (``"approvalId" is missing``)."""


def _text(raw: Mapping[str, Any], name: str) -> str | None:
    value = raw.get(name)
    return value if isinstance(value, str) and value else None


def _approval_defaults(raw: Mapping[str, Any]) -> dict[str, Any]:
    subject = raw.get("subject")
    named = subject.get("toolName") if isinstance(subject, dict) else None
    tool_name = _text(raw, "toolName") or (named if isinstance(named, str) else None) or "tool"
    item = _text(raw, "itemId") or _text(raw, "toolCallId") or _text(raw, "approvalId") or ""
    return {
        "turnId": "",
        "viewCursor": "",
        "rawArgs": "{}",
        "itemId": item,
        "toolCallId": item,
        "toolName": tool_name,
        "subject": {"kind": "tool", "toolName": tool_name},
    }


def _question_defaults(raw: Mapping[str, Any]) -> dict[str, Any]:
    item = _text(raw, "itemId") or _text(raw, "toolCallId") or _text(raw, "userInputId") or ""
    return {
        "turnId": "",
        "viewCursor": "",
        "itemId": item,
        "toolCallId": item,
        "toolName": "request_user_input",
    }


_Defaults = Callable[[Mapping[str, Any]], dict[str, Any]]

_READERS: Final[Mapping[str, tuple[type[WireModel], _Defaults]]] = MappingProxyType(
    {
        "approval/requested": (msp.ApprovalRequestedParams, _approval_defaults),
        "userInput/requested": (msp.UserInputRequestedParams, _question_defaults),
    }
)
ASK_METHODS: Final = frozenset(_READERS)
"""The notifications read by ``read_ask`` (server requests are read as their twin)."""


def read_ask(method: str, raw: Mapping[str, Any]) -> WireModel:
    """Read the params of the approval or question ``method`` (see the module contract).

    Raises:
        KeyError: ``method`` is not one of ``ASK_METHODS``.
    """
    model, defaults = _READERS[method]
    try:
        return model.model_validate(raw, by_alias=True, by_name=False)
    except ValidationError:
        pass
    filled = {**defaults(raw), **raw}
    try:
        return model.model_validate(filled, by_alias=True, by_name=False)
    except ValidationError as error:
        detail = describe_validation_error(error, filled)
    session_id = raw.get("sessionId")
    return UnreadableAsk(
        session_id=session_id if isinstance(session_id, str) else "",
        method=method,
        detail=detail,
    )
