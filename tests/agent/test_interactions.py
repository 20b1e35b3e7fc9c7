"""A turn's approvals and questions: latest stage only, client failures in our own words, and
every host acknowledgement bounded in the phase it was awaited in."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import anyio
import pytest
from anyio.abc import TaskGroup

from muse_acp.agent.cards.card_states import TurnCards
from muse_acp.agent.errors import failures
from muse_acp.agent.turns.interactions import Interactions
from muse_acp.rpc import RpcError
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

pytestmark = pytest.mark.anyio

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "msp" / "valid"
WAIT = 5.0
R = TypeVar("R", bound=WireModel)

ClientAnswer = JsonValue | RpcError
HostAnswer = dict[str, Any] | RpcError | None
"""A result, a host error (refusal or failure), or None to leave the request unanswered."""


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    return data


@dataclass
class FakeTurn:
    """A real, small ``TurnPort``: answers are scripted, everything sent is recorded."""

    client: dict[str, ClientAnswer] = field(default_factory=dict)
    host: dict[str, HostAnswer] = field(default_factory=dict)
    forms: bool = True
    automatic: Literal["approve", "reject"] | None = None
    turn_id: str | None = None
    session_id: str = "0193c2d0-7a10-7b3e-9c41-5d2e8f6a1b01"
    tasks: TaskGroup | None = None
    failure: RpcError | None = None
    explained: RpcError | None = None
    updates: list[acp.SessionUpdate] = field(default_factory=list)
    asked_client: list[str] = field(default_factory=list)
    sent: list[tuple[str, WireModel]] = field(default_factory=list)

    @property
    def accepting(self) -> bool:
        return self.tasks is not None and self.failure is None

    def fail(self, error: RpcError) -> None:
        self.failure = self.failure or error

    def explain_failure(self, error: RpcError) -> None:
        self.explained = self.explained or error

    async def send_update(self, update: acp.SessionUpdate) -> None:
        self.updates.append(update)

    def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        assert self.tasks is not None
        self.tasks.start_soon(work)

    async def ask_client(self, method: str, params: WireModel) -> JsonValue:
        self.asked_client.append(method)
        answer = self.client[method]
        if isinstance(answer, RpcError):
            raise answer
        return answer

    async def ask_host(
        self, method: str, params: WireModel, result_type: type[R], phase: failures.Phase
    ) -> R:
        self.sent.append((method, params))
        if method not in self.host:
            # Acknowledged; the caller never looks inside, so an empty result stands for it.
            return cast(R, result_type.model_construct())
        answer = self.host[method]
        if answer is None:
            raise failures.deadline_exceeded(phase, 0.01)
        if isinstance(answer, RpcError):
            raise failures.host_rejected(method, answer, phase)
        return result_type.model_validate(answer)


async def _settle(turn: FakeTurn, *events: WireModel) -> Interactions:
    """Feed ``events`` to a turn's interactions and wait until everything they started ended."""
    interactions = Interactions(turn)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            turn.tasks = tasks
            for event in events:
                interactions.on_event(event)
    return interactions


def _requested() -> msp.ApprovalRequestedParams:
    return msp.ApprovalRequestedParams.model_validate(_load("approval_requested.json"))


def _question() -> msp.UserInputRequestedParams:
    return msp.UserInputRequestedParams.model_validate(_load("user_input_requested.json"))


def _failure(turn: FakeTurn) -> dict[str, Any]:
    assert turn.failure is not None
    return _failure_data(turn.failure)


def _failure_data(error: RpcError) -> dict[str, Any]:
    data = error.data
    assert isinstance(data, dict)
    assert isinstance(data["failure"], dict)
    return data["failure"]


def test_a_late_repeat_of_the_request_does_not_roll_an_approval_back() -> None:
    requested = _requested()
    updated = msp.ApprovalUpdatedParams.model_validate(_load("approval_updated.json"))
    interactions = Interactions(FakeTurn())  # no task group: events are only recorded
    interactions.on_event(requested)
    interactions.on_event(updated)
    # The server-request twin of the first event, delivered from its own task, comes last.
    interactions.on_event(requested)
    view = interactions.current(requested.approval_id)
    assert view is not None
    assert view.key == (requested.approval_id, 1)


def test_a_resolved_approval_is_not_revived_by_a_late_repeat() -> None:
    requested = _requested()
    resolved = msp.ApprovalResolvedParams.model_validate(_load("approval_resolved.json"))
    interactions = Interactions(FakeTurn())
    interactions.on_event(requested)
    interactions.on_event(resolved.model_copy(update={"approval_id": requested.approval_id}))
    interactions.on_event(requested)
    assert interactions.current(requested.approval_id) is None


async def test_the_clients_choice_is_decided_on_the_host() -> None:
    requested = _requested()
    choice = requested.available_choices[0].choice_id
    turn = FakeTurn(
        client={
            "session/request_permission": {"outcome": {"outcome": "selected", "optionId": choice}}
        }
    )
    await _settle(turn, requested)
    assert turn.failure is None
    [(method, params)] = turn.sent
    assert method == "approval/decide"
    assert isinstance(params, msp.ApprovalDecideParams)
    assert params.choice_id == choice


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (RpcError(-32603, "client\ncrashed"), "the client answered with error -32603"),
        ({"outcome": "yes please"}, "not a valid result (outcome"),
        ({"outcome": {"outcome": "selected"}}, "not a valid result (outcome"),
        ([1, 2], "not a valid result"),
        ({"outcome": {"outcome": "selected", "optionId": "not-offered"}}, "did not offer"),
    ],
    ids=["client error", "wrong type", "missing member", "not an object", "unoffered option"],
)
async def test_an_unusable_permission_answer_is_the_clients_failure_in_our_words(
    answer: ClientAnswer, said: str
) -> None:
    turn = FakeTurn(client={"session/request_permission": answer})
    await _settle(turn, _requested())
    failure = _failure(turn)
    assert (failure["kind"], failure["source"]) == ("permissionFailed", "client")
    assert turn.failure is not None
    message = turn.failure.message
    assert said in message
    for leaked in ("input_value", "pydantic", "errors.pydantic.dev", "\n"):
        assert leaked not in message, message
    assert turn.sent == []


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (
            {"outcome": "yes please"},
            "from the client: the answer to session/request_permission is not a valid result (",
        ),
        (
            {"outcome": {"outcome": "selected", "optionId": "not-offered"}},
            "from the client: muse-acp could not use the client's answer, because the client "
            "selected permission option 'not-offered', which Muse did not offer",
        ),
    ],
    ids=["invalid", "unoffered option"],
)
async def test_a_permission_answer_muse_acp_refuses_is_told_as_its_own_refusal(
    answer: ClientAnswer, said: str
) -> None:
    # Refusing an option the client picked used to read "the client answered with error
    # -32602", and an invalid answer "the client's its answer".
    turn = FakeTurn(client={"session/request_permission": answer})
    await _settle(turn, _requested())
    assert turn.failure is not None
    message = turn.failure.message
    assert said in message
    assert "answered with error" not in message
    assert "client's its" not in message


async def test_a_cancel_muse_offers_no_denial_for_is_one_failure_not_a_nested_one() -> None:
    requested = _requested()
    allowing = [c for c in requested.available_choices if c.decision.startswith("approved")]
    turn = FakeTurn(client={"session/request_permission": {"outcome": {"outcome": "cancelled"}}})
    await _settle(turn, requested.model_copy(update={"available_choices": allowing}))
    assert turn.failure is not None
    message = turn.failure.message
    assert message.count("No permission decision could be obtained") == 1, message
    assert "answered with error" not in message
    assert "offered no choice that denies the action" in message


async def test_an_unusable_question_answer_reads_as_one_sentence() -> None:
    turn = FakeTurn(client={"elicitation/create": {"action": "accept", "content": {}}})
    await _settle(turn, _question())
    assert turn.explained is not None
    message = turn.explained.message
    assert "from the client: the form answer has no value for question" in message
    assert "client's the" not in message


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (RpcError(-32603, "form broke"), "the client answered with error -32603"),
        ({"action": "maybe"}, "not a valid result (action"),
        ({"action": "accept", "content": {}}, "has no value for question"),
    ],
    ids=["client error", "wrong action", "unanswered question"],
)
async def test_an_unusable_question_answer_says_question_and_withdraws_it_from_muse(
    answer: ClientAnswer, said: str
) -> None:
    turn = FakeTurn(client={"elicitation/create": answer})
    await _settle(turn, _question())
    # Muse decides how the turn goes on; should it end the turn failed, this says why.
    assert turn.failure is None
    assert turn.explained is not None
    failure = _failure_data(turn.explained)
    assert (failure["kind"], failure["source"]) == ("questionFailed", "client")
    assert said in turn.explained.message
    assert "permission" not in turn.explained.message
    assert [method for method, _ in turn.sent] == ["userInput/cancel"]
    [notice] = turn.updates
    assert isinstance(notice, acp.AgentMessageChunkSessionUpdate)
    assert isinstance(notice.content, acp.TextContentBlock)
    assert said in notice.content.text
    assert "withdrawn" in notice.content.text


@pytest.mark.parametrize(
    ("event", "client", "method"),
    [
        (
            "approval",
            {"session/request_permission": {"outcome": {"outcome": "cancelled"}}},
            "approval/decide",
        ),
        ("question", {"elicitation/create": {"action": "decline"}}, "userInput/cancel"),
    ],
)
async def test_an_acknowledgement_that_never_comes_fails_the_turn_while_answering(
    event: str, client: dict[str, ClientAnswer], method: str
) -> None:
    turn = FakeTurn(client=client, host={method: None})
    await _settle(turn, _requested() if event == "approval" else _question())
    failure = _failure(turn)
    assert (failure["kind"], failure["phase"]) == ("deadlineExceeded", "answering")
    assert turn.failure is not None
    assert "submitting" not in turn.failure.message


@pytest.mark.parametrize(
    ("method", "event", "kind", "benign"),
    [
        ("approval/decide", "approval", "approvalAlreadyResolved", True),
        ("approval/decide", "approval", "approvalChoiceInvalid", False),
        ("userInput/cancel", "question", "userInputAlreadySettled", True),
        ("userInput/cancel", "question", "commandRejected", False),
    ],
)
async def test_only_harmless_host_refusals_of_an_answer_let_the_turn_go_on(
    method: str, event: str, kind: str, benign: bool
) -> None:
    client: dict[str, ClientAnswer] = {
        "session/request_permission": {"outcome": {"outcome": "cancelled"}},
        "elicitation/create": {"action": "decline"},
    }
    refusal = RpcError(-32051, "no", {"kind": kind})
    turn = FakeTurn(client=client, host={method: refusal})
    await _settle(turn, _requested() if event == "approval" else _question())
    assert (turn.failure is None) == benign
    if not benign:
        assert _failure(turn)["kind"] == "hostRejected"


async def test_a_client_without_forms_gets_no_question_and_muse_hears_why() -> None:
    turn = FakeTurn(forms=False)
    await _settle(turn, _question())
    assert turn.asked_client == []
    assert turn.failure is None
    assert turn.explained is not None
    assert _failure_data(turn.explained)["kind"] == "userInputUnsupported"
    [notice] = turn.updates
    assert isinstance(notice, acp.AgentMessageChunkSessionUpdate)
    assert isinstance(notice.content, acp.TextContentBlock)
    assert "cannot show question forms" in notice.content.text
    [(method, params)] = turn.sent
    assert method == "userInput/cancel"
    assert isinstance(params, msp.UserInputCancelParams)


# -- the tool call's card, as approvals see it ----------------------------------------------


@dataclass
class _AskingTurn(FakeTurn):
    """A ``FakeTurn`` that also keeps what the client was asked."""

    asked: list[WireModel] = field(default_factory=list)

    async def ask_client(self, method: str, params: WireModel) -> JsonValue:
        self.asked.append(params)
        return await super().ask_client(method, params)


async def _settle_with(turn: FakeTurn, cards: TurnCards, *events: WireModel) -> None:
    interactions = Interactions(turn, cards)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            turn.tasks = tasks
            for event in events:
                interactions.on_event(event)


def _tool_item(requested: msp.ApprovalRequestedParams, status: str) -> msp.ToolCallItem:
    item = msp.ToolCallItem(
        item_id=requested.item_id,
        kind="toolCall",
        turn_id=requested.turn_id,
        revision=1,
        status=status,
        recorded_at="2026-01-01T00:00:00Z",
        tool=requested.tool_name,
        call_id=requested.tool_call_id,
        args=requested.raw_args,
    )
    return item


def _selecting(choice: str) -> dict[str, ClientAnswer]:
    return {"session/request_permission": {"outcome": {"outcome": "selected", "optionId": choice}}}


async def test_the_permission_for_a_running_card_does_not_send_it_back_to_pending() -> None:
    requested = _requested()
    cards = TurnCards(requested.session_id)
    cards.sighting(requested.tool_call_id or "", _tool_item(requested, "inProgress"))
    turn = _AskingTurn(client=_selecting("allow_once"))
    await _settle_with(turn, cards, requested)
    [request] = turn.asked
    assert isinstance(request, acp.RequestPermissionRequest)
    assert "status" not in request.tool_call.model_dump(exclude_unset=True)
    unseen = _AskingTurn(client=_selecting("allow_once"))
    await _settle_with(unseen, TurnCards(requested.session_id), requested)
    [first] = unseen.asked
    assert isinstance(first, acp.RequestPermissionRequest)
    assert first.tool_call.status == "pending"


async def test_an_editing_tools_permission_shows_the_file_read_first(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("old\n")
    args = json.dumps({"content": "new\n", "path": "notes.txt"})
    requested = _requested().model_copy(update={"tool_name": "write_file", "raw_args": args})
    turn = _AskingTurn(client=_selecting("allow_once"))
    await _settle_with(turn, TurnCards(requested.session_id, cwd=str(tmp_path)), requested)
    [request] = turn.asked
    assert isinstance(request, acp.RequestPermissionRequest)
    path = str(tmp_path / "notes.txt")
    assert request.tool_call.content == [
        acp.DiffToolCallContent(type="diff", path=path, old_text="old\n", new_text="new\n")
    ]
    assert request.tool_call.locations == [acp.ToolCallLocation(path=path)]


REJECTED_TEXTS = {
    "user": "[Rejected: the user did not allow this tool call.]",
    "client": "[Rejected: the client cancelled the permission request, so muse-acp declined "
    "this tool call.]",
    "mode": "[Rejected: the session's Auto-reject mode declined this tool call.]",
}


@pytest.mark.parametrize(
    ("client", "automatic", "who"),
    [
        (_selecting("abort"), None, "user"),
        ({"session/request_permission": {"outcome": {"outcome": "cancelled"}}}, None, "client"),
        ({}, "reject", "mode"),
    ],
    ids=["the user rejected", "the client cancelled", "the mode rejected"],
)
async def test_a_denial_the_host_took_marks_the_failed_card_rejected(
    client: dict[str, ClientAnswer], automatic: Literal["reject"] | None, who: str
) -> None:
    requested = _requested()
    cards = TurnCards(requested.session_id)
    # The host may end the tool before it answers the decision: the card is sent again.
    cards.sighting(requested.tool_call_id or "", _tool_item(requested, "failed"))
    turn = FakeTurn(client=client, automatic=automatic)
    await _settle_with(turn, cards, requested)
    [update] = turn.updates
    assert isinstance(update, acp.ToolCallUpdateSessionUpdate)
    assert (update.status, update.title) == ("failed", "Rejected: git status && wc -l README.md")
    assert update.content == [
        acp.ContentToolCallContent(
            type="content", content=acp.TextContentBlock(type="text", text=REJECTED_TEXTS[who])
        )
    ]


@pytest.mark.parametrize(
    ("client", "host"),
    [
        (_selecting("allow_once"), {}),
        (
            _selecting("abort"),
            {"approval/decide": RpcError(-32051, "no", {"kind": "approvalAlreadyResolved"})},
        ),
    ],
    ids=["approved", "the denial came too late"],
)
async def test_only_a_denial_the_host_took_marks_the_card(
    client: dict[str, ClientAnswer], host: dict[str, HostAnswer]
) -> None:
    requested = _requested()
    cards = TurnCards(requested.session_id)
    cards.sighting(requested.tool_call_id or "", _tool_item(requested, "failed"))
    turn = FakeTurn(client=client, host=host)
    await _settle_with(turn, cards, requested)
    assert turn.updates == []
