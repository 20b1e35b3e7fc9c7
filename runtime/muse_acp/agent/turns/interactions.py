"""The approvals and questions of one turn: ask the client (or decide), then answer Muse.

Contract: ``Interactions`` answers each approval stage and question in a task of the turn,
reaching the turn only through ``TurnPort``. The client is asked once per approval stage, with
the card as ``TurnCards`` keeps it, and only choices the host offered are sent back; automatic
modes pick an offered "once" choice; one Muse asks for a subagent is asked in the subagent's
child session for a client that takes them (``subagent_views``). A stale decision (-32053)
makes it read the pending approvals back and ask about the current stage. A question goes
to the client as a form elicitation. Everything outstanding is withdrawn when the turn settles
or is cancelled.

Errors: an unusable permission answer fails the turn as the client's failure; a question the
client cannot show or answer is withdrawn from Muse (``userInput/cancel``) and said in the chat;
a host acknowledgement not within the submit budget fails the turn in the ``answering`` phase.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any, Final, Literal, Protocol, TypeVar

import anyio

from muse_acp.agent.asks import ask_failures
from muse_acp.agent.asks.engagement import engage
from muse_acp.agent.asks.permissions import (
    DENYING_DECISIONS,
    ApprovalView,
    automatic_choice,
    choice_from_response,
    permission_request,
)
from muse_acp.agent.asks.questions import (
    CancelKind,
    answers_from_response,
    elicitation_request,
    user_input_cancel_reason,
    withdrawn_notice,
)
from muse_acp.agent.cards.card_states import Refusal, TurnCards
from muse_acp.agent.cards.file_changes import capture_before
from muse_acp.agent.cards.tool_kinds import kind_for_tool
from muse_acp.agent.errors import failures
from muse_acp.agent.translation.event_kinds import ASKS
from muse_acp.agent.turns.subagent_views import SubagentViews
from muse_acp.host.asks import UnreadableAsk
from muse_acp.host.client import MspHost
from muse_acp.ids import new_uuid7
from muse_acp.rpc import RpcError
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["Interactions", "TurnPort"]

logger: Final = logging.getLogger("muse_acp.agent")

R = TypeVar("R", bound=WireModel)

STALE_REQUIREMENT: Final = "approvalRequirementStale"
BENIGN_DECISION_ERRORS: Final = frozenset({"approvalAlreadyResolved"})
BENIGN_CANCEL_ERRORS: Final = frozenset({"userInputNotFound", "userInputAlreadySettled"})


class TurnPort(Protocol):
    """What approvals and questions need of their turn (``turn.ActiveTurn`` is one)."""

    @property
    def session_id(self) -> str: ...

    @property
    def turn_id(self) -> str | None: ...

    @property
    def accepting(self) -> bool:
        """The turn runs, is not settled and not being cancelled: new asks may start."""

    @property
    def automatic(self) -> Literal["approve", "reject"] | None:
        """How the session's mode answers approvals itself, or None to ask the client."""

    @property
    def forms(self) -> bool:
        """The client can answer form elicitations."""

    def fail(self, error: RpcError) -> None: ...

    def explain_failure(self, error: RpcError) -> None: ...  # reported if Muse ends it failed

    def spawn(self, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``work`` in the turn's task group (cancelled when the turn settles)."""

    async def ask_client(self, method: str, params: WireModel) -> JsonValue: ...

    async def send_update(self, update: acp.SessionUpdate) -> None: ...

    async def ask_host(
        self, method: str, params: WireModel, result_type: type[R], phase: failures.Phase
    ) -> R: ...


class Interactions:
    """Approvals and questions of one turn (see the module contract)."""

    def __init__(
        self,
        turn: TurnPort,
        cards: TurnCards | None = None,
        host: MspHost | None = None,
        subagents: SubagentViews | None = None,
    ) -> None:
        self._turn = turn
        self._host = host
        self._cards = cards or TurnCards(turn.session_id)
        self._subagents = subagents
        self._approvals: dict[str, ApprovalView] = {}
        self._asked: set[tuple[str, int]] = set()
        self._asking: dict[str, anyio.CancelScope] = {}
        self._questions: dict[str, anyio.CancelScope] = {}
        self._seen_questions: set[str] = set()
        self._seen_approvals: set[str] = set()

    def current(self, approval_id: str) -> ApprovalView | None:
        """The approval as it stands now (None once resolved or never seen)."""
        return self._approvals.get(approval_id)

    def waiting_on_client(self) -> bool:
        """An approval or a question is being put to (or answered for) the user right now."""
        return bool(self._asking or self._questions)

    def withdraw_all(self) -> None:
        """Stop asking: pending permission requests and forms are withdrawn."""
        for scope in [*self._asking.values(), *self._questions.values()]:
            scope.cancel()

    def on_event(self, params: WireModel) -> None:
        """Take note of an approval or question event (must not block)."""
        if not ASKS.holds(params):
            return
        if isinstance(params, UnreadableAsk):
            if self._turn.accepting:
                self._turn.fail(ask_failures.unreadable_ask(params.method, params.detail))
        elif isinstance(params, msp.ApprovalRequestedParams):
            # Hosts may send an approval twice (the notification and the server request, which
            # is delivered from its own task and can arrive after later updates); only the
            # first is news, a repeat must not roll the approval back to its first stage.
            if params.approval_id not in self._seen_approvals:
                self._seen_approvals.add(params.approval_id)
                # A subagent's approval is of the child's own turn, asked during this one.
                turn_id = None if params.subagent_origin else params.turn_id
                self._on_approval(ApprovalView.from_requested(params), turn_id)
        elif isinstance(params, msp.ApprovalUpdatedParams):
            view = self._approvals.get(params.approval_id)
            if view is not None:
                self._on_approval(view.updated(params), self._turn.turn_id)
        elif isinstance(params, msp.ApprovalResolvedParams):
            self._approvals.pop(params.approval_id, None)
            scope = self._asking.get(params.approval_id)
            if scope is not None:
                scope.cancel()
        elif isinstance(params, msp.UserInputRequestedParams):
            self._on_question(params)
        elif isinstance(params, msp.UserInputSettledParams):
            scope = self._questions.get(params.user_input_id)
            if scope is not None:
                scope.cancel()

    def _on_approval(self, view: ApprovalView, turn_id: str | None) -> None:
        if turn_id and self._turn.turn_id is not None and turn_id != self._turn.turn_id:
            return  # another turn's (an empty id: the host did not say, so it is this one's)
        self._approvals[view.approval_id] = view
        if not self._turn.accepting:
            return
        if view.approval_id not in self._asking and view.key not in self._asked:
            scope = anyio.CancelScope()
            self._asking[view.approval_id] = scope
            approval_id = view.approval_id
            self._turn.spawn(lambda: self._answer_approval(approval_id, scope))

    async def _answer_approval(self, approval_id: str, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                while (view := self._approvals.get(approval_id)) and view.key not in self._asked:
                    self._asked.add(view.key)
                    chosen = await self._choose(view)
                    if chosen is None:
                        return
                    current = self._approvals.get(approval_id)
                    if current is None or current.key != view.key:
                        continue  # the host moved on while the client decided
                    await self._decide(view, *chosen)
        finally:
            self._asking.pop(approval_id, None)

    async def _choose(self, view: ApprovalView) -> tuple[str, Refusal | None] | None:
        """The host choice to send, and who declined the call when it is a denial."""
        automatic = self._turn.automatic
        if automatic is not None:
            choice = automatic_choice(view, automatic)
            if choice is None:
                self._turn.fail(ask_failures.automatic_unavailable(automatic))
                return None
            return choice, "mode" if automatic == "reject" else None
        requested = view.requested
        call_id, tool = requested.tool_call_id or requested.item_id, requested.tool_name
        session_id, cards = await self._asked_in(requested)
        # An editing tool's file is read before the client sees its change, if not read yet.
        await capture_before(cards, call_id, tool, requested.raw_args)
        request = permission_request(
            session_id,
            view,
            tool_call_id=call_id,
            kind=kind_for_tool(tool),
            card=cards.permission(call_id, tool, requested.raw_args),
        )
        method = "session/request_permission"
        try:
            raw = await self._turn.ask_client(method, request)
        except RpcError as error:
            self._turn.fail(
                ask_failures.client_answer_failed("permission", ask_failures.client_words(error))
            )
            return None
        try:
            response = ask_failures.client_result(acp.RequestPermissionResponse, raw, method)
            choice = choice_from_response(view, response)
        except (ValueError, RpcError) as refused:  # by muse-acp: not an error the client sent
            self._turn.fail(ask_failures.answer_refused("permission", refused))
            return None
        decision = next(c.decision for c in view.choices if c.choice_id == choice)
        selected = isinstance(response.outcome, acp.SelectedRequestPermissionOutcome)
        return choice, (
            None if decision not in DENYING_DECISIONS else "user" if selected else "client"
        )

    async def _asked_in(self, requested: msp.ApprovalRequestedParams) -> tuple[str, TurnCards]:
        """The session an approval is asked in, and its cards: a subagent's own child session
        for a client that takes them (``subagent_views``), else this turn's."""
        origin, subagents = requested.subagent_origin, self._subagents
        child = None if origin is None or subagents is None else await subagents.asking(origin)
        return child or (self._turn.session_id, self._cards)

    async def _decide(self, view: ApprovalView, choice: str, refusal: Refusal | None) -> None:
        params = msp.ApprovalDecideParams(
            command_id=new_uuid7(),
            session_id=self._turn.session_id,
            approval_id=view.approval_id,
            requirement_id=view.requirement,
            choice_id=choice,
        )
        try:
            await self._turn.ask_host(
                "approval/decide", params, msp.ApprovalDecideResult, "answering"
            )
        except failures.HostRefusal as refused:
            if refused.host_kind == STALE_REQUIREMENT:
                await self._reread(view.approval_id)
            elif refused.host_kind not in BENIGN_DECISION_ERRORS:
                self._turn.fail(refused)
            return
        except RpcError as failure:
            self._turn.fail(failure)
            return
        if refusal is not None and view.requested.subagent_origin is None:
            # The host took the denial: the card says who declined it (a subagent's card is
            # its own session's, which says so itself).
            requested = view.requested
            call_id = requested.tool_call_id or requested.item_id
            for update in self._cards.refused(call_id, refusal):
                await self._turn.send_update(update)

    async def _reread(self, approval_id: str) -> None:
        """Learn the approval's current stage from the host after a stale decision.

        A host may settle a stage itself and move on without an ``approval/updated`` (1.4.2
        does), so the stage the client decided is gone and nothing new would ever be asked:
        the pending approvals are read back, and the one still pending replaces the view so
        the caller asks about its current stage. One that is no longer pending was resolved.
        """
        params = msp.ApprovalListPendingParams(session_id=self._turn.session_id)
        try:
            pending = await self._turn.ask_host(
                "approval/listPending", params, msp.ApprovalListPendingResult, "answering"
            )
        except RpcError as failure:
            self._turn.fail(failure)
            return
        listed = next((a for a in pending.approvals if a.approval_id == approval_id), None)
        if listed is None:
            self._approvals.pop(approval_id, None)
        else:
            self._approvals[approval_id] = ApprovalView.from_requested(listed)

    def _on_question(self, params: msp.UserInputRequestedParams) -> None:
        if (
            params.turn_id
            and self._turn.turn_id is not None
            and params.turn_id != self._turn.turn_id
        ):
            return
        if not self._turn.accepting or params.user_input_id in self._seen_questions:
            return
        self._seen_questions.add(params.user_input_id)
        scope = anyio.CancelScope()
        self._questions[params.user_input_id] = scope
        self._turn.spawn(lambda: self._answer_question(params, scope))

    async def _answer_question(
        self, params: msp.UserInputRequestedParams, scope: anyio.CancelScope
    ) -> None:
        try:
            with scope:
                await self._ask_question(params)
        finally:
            self._questions.pop(params.user_input_id, None)

    async def _ask_question(self, params: msp.UserInputRequestedParams) -> None:
        if not self._turn.forms:
            await self._withdraw_question(
                params,
                "unsupported",
                ask_failures.user_input_unsupported(),
                "this ACP client cannot show question forms",
            )
            return
        method = "elicitation/create"
        await engage(self._host, self._turn.session_id, params.user_input_id)
        try:
            raw = await self._turn.ask_client(
                method, elicitation_request(self._turn.session_id, params)
            )
            response = ask_failures.client_result(acp.CreateElicitationResponse, raw, method)
            answers = answers_from_response(params, response)
        except RpcError as error:
            said = ask_failures.client_words(error)
            failure = ask_failures.client_answer_failed("question", said)
            await self._withdraw_question(params, "invalid", failure, said)
            return
        except ValueError as error:
            said = str(error)
            failure = ask_failures.client_answer_failed("question", said)
            await self._withdraw_question(params, "invalid", failure, said)
            return
        if answers is None:
            await self._cancel_question(params, "declined")
            return
        answer = msp.UserInputAnswerParams(
            command_id=new_uuid7(),
            session_id=self._turn.session_id,
            user_input_id=params.user_input_id,
            answers=answers,
        )
        try:
            await self._turn.ask_host(
                "userInput/answer", answer, msp.UserInputCommandResult, "answering"
            )
        except failures.HostRefusal as refused:
            self._turn.fail(refused)
        except RpcError as failure:
            self._turn.fail(failure)

    async def _withdraw_question(
        self,
        params: msp.UserInputRequestedParams,
        why: CancelKind,
        failure: RpcError,
        detail: str,
    ) -> None:
        """A question the client could not show or answer: say so in the chat, withdraw it from
        Muse, and let Muse decide how the turn goes on; should Muse end it failed, ``failure``
        (whose source is the client) says why."""
        self._turn.explain_failure(failure)
        notice = withdrawn_notice(params, detail)
        await self._turn.send_update(
            acp.AgentMessageChunkSessionUpdate(
                session_update="agent_message_chunk",
                content=acp.TextContentBlock(type="text", text=f"\n\n{notice}\n\n"),
            )
        )
        await self._cancel_question(params, why)

    async def _cancel_question(self, params: msp.UserInputRequestedParams, why: CancelKind) -> None:
        cancel = msp.UserInputCancelParams(
            command_id=new_uuid7(),
            session_id=self._turn.session_id,
            user_input_id=params.user_input_id,
            reason=user_input_cancel_reason(why),
        )
        # Shielded: the turn may already be settling, and the host must still hear it.
        with anyio.CancelScope(shield=True):
            try:
                await self._turn.ask_host(
                    "userInput/cancel", cancel, msp.UserInputCommandResult, "answering"
                )
            except failures.HostRefusal as refused:
                if refused.host_kind not in BENIGN_CANCEL_ERRORS:
                    self._turn.fail(refused)
            except RpcError as failure:
                self._turn.fail(failure)
