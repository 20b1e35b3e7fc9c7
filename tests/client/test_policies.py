"""Permission policies and handlers, and how the client answers the agent's questions."""

from __future__ import annotations

from typing import Any

import pytest

from muse_acp.client import (
    PermissionHandler,
    allow_always,
    allow_once,
    cancel_all,
    reject_always,
    reject_once,
)
from muse_acp.rpc import METHOD_NOT_FOUND, JsonObject, RpcError
from muse_acp_wire import acp

from .fake_agent import SESSION_ID, FakeAgent, fake_client

pytestmark = pytest.mark.anyio

OPTIONS = [
    ("reject-1", "reject_once"),
    ("allow-1", "allow_once"),
    ("allow-2", "allow_once"),
    ("always", "allow_always"),
    ("never", "reject_always"),
]


def permission_request(options: list[tuple[str, str]] = OPTIONS) -> acp.RequestPermissionRequest:
    return acp.RequestPermissionRequest.model_validate(
        {
            "sessionId": SESSION_ID,
            "toolCall": {"toolCallId": "call-1", "title": "ls -la", "kind": "execute"},
            "options": [
                {"optionId": option_id, "name": option_id, "kind": kind}
                for option_id, kind in options
            ],
        }
    )


def chosen(response: acp.RequestPermissionResponse) -> str | None:
    outcome = response.outcome
    return outcome.option_id if isinstance(outcome, acp.SelectedRequestPermissionOutcome) else None


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (allow_once, "allow-1"),
        (allow_always, "always"),
        (reject_once, "reject-1"),
        (reject_always, "never"),
        (cancel_all, None),
    ],
)
def test_each_policy_selects_the_first_option_of_its_kind(
    policy: PermissionHandler, expected: str | None
) -> None:
    response = policy(permission_request())
    assert isinstance(response, acp.RequestPermissionResponse)
    assert chosen(response) == expected


def test_a_policy_whose_kind_is_not_offered_answers_cancelled() -> None:
    response = allow_once(permission_request([("reject-1", "reject_once")]))
    assert isinstance(response, acp.RequestPermissionResponse)
    assert response.outcome.outcome == "cancelled"


async def ask_permission(agent: FakeAgent) -> Any:
    return await agent.ask("session/request_permission", permission_request())


async def test_permission_requests_reach_a_sync_handler_and_its_answer_goes_back() -> None:
    agent = FakeAgent()
    asked: list[acp.RequestPermissionRequest] = []

    def handler(request: acp.RequestPermissionRequest) -> acp.RequestPermissionResponse:
        asked.append(request)
        return reject_once(request)

    async with fake_client(agent, on_permission=handler):
        answer = await ask_permission(agent)
    assert answer == {"outcome": {"outcome": "selected", "optionId": "reject-1"}}
    assert [request.tool_call.title for request in asked] == ["ls -la"]


async def test_permission_requests_reach_an_async_handler() -> None:
    agent = FakeAgent()

    async def handler(request: acp.RequestPermissionRequest) -> acp.RequestPermissionResponse:
        return allow_once(request)

    async with fake_client(agent, on_permission=handler):
        answer = await ask_permission(agent)
    assert answer == {"outcome": {"outcome": "selected", "optionId": "allow-1"}}


async def test_without_a_handler_permission_requests_are_answered_cancelled() -> None:
    agent = FakeAgent()
    async with fake_client(agent):
        answer = await ask_permission(agent)
    assert answer == {"outcome": {"outcome": "cancelled"}}


async def test_elicitations_go_to_the_handler_or_are_cancelled_without_one() -> None:
    question: JsonObject = {
        "sessionId": SESSION_ID,
        "mode": "form",
        "message": "Which colour?",
        "requestedSchema": {
            "type": "object",
            "properties": {"colour": {"type": "string"}},
            "required": ["colour"],
        },
    }

    def answer(request: acp.CreateElicitationRequest) -> acp.CreateElicitationResponse:
        return acp.CreateElicitationResponse(action="accept", content={"colour": "teal"})

    agent = FakeAgent()
    async with fake_client(agent, on_elicitation=answer):
        assert await agent.ask("elicitation/create", question) == {
            "action": "accept",
            "content": {"colour": "teal"},
        }
    agent = FakeAgent()
    async with fake_client(agent):
        assert await agent.ask("elicitation/create", question) == {"action": "cancel"}


async def test_file_system_and_terminal_requests_are_refused() -> None:
    agent = FakeAgent()
    async with fake_client(agent):
        with pytest.raises(RpcError) as caught:
            await agent.ask(
                "fs/read_text_file", {"sessionId": SESSION_ID, "path": "/workspace/notes.txt"}
            )
    assert caught.value.code == METHOD_NOT_FOUND
