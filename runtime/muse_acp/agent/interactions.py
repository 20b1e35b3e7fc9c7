"""The approvals and questions of one turn: ask the client (or decide), then answer Muse.

Muse asks for approval (``approval/requested``, updated stage by stage with
``approval/updated``) and asks questions (``userInput/requested``) while a turn runs. Each is
answered in a task of the turn, because answering waits on the client and on further host
frames, while host events keep flowing. The client is asked once per approval stage; only
choices the host offered are ever sent back; a decision the host reports as stale or already
resolved is harmless. Automatic modes pick a host-offered "once" choice and fail the turn when
there is none. A question goes to the client as a form elicitation when it supports forms;
otherwise the turn fails clearly and the question is cancelled on the host. Everything
outstanding is withdrawn when the turn settles or is cancelled.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final

import anyio

from muse_acp.agent import failures
from muse_acp.agent.config_options import MODES
from muse_acp.agent.permissions import (
    ApprovalView,
    automatic_choice,
    choice_from_response,
    permission_request,
)
from muse_acp.agent.questions import (
    CancelKind,
    answers_from_response,
    elicitation_request,
    user_input_cancel_reason,
)
from muse_acp.agent.tool_cards import kind_for_tool
from muse_acp.ids import new_uuid7
from muse_acp.msp_types import msp
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp_wire import acp
from muse_acp_wire._base import WireModel

if TYPE_CHECKING:
    from muse_acp.agent.turn import ActiveTurn

logger: Final = logging.getLogger("muse_acp.agent")

BENIGN_DECISION_ERRORS: Final = frozenset({"approvalRequirementStale", "approvalAlreadyResolved"})


def _error_kind(error: RpcError) -> str | None:
    data = error.data
    kind = data.get("kind") if isinstance(data, dict) else None
    return kind if isinstance(kind, str) else None


class Interactions:
    """Approvals and questions of one turn (see the module contract)."""

    def __init__(self, turn: ActiveTurn) -> None:
        self._turn = turn
        self._approvals: dict[str, ApprovalView] = {}
        self._asked: set[tuple[str, int]] = set()
        self._asking: dict[str, anyio.CancelScope] = {}
        self._questions: dict[str, anyio.CancelScope] = {}
        self._seen_questions: set[str] = set()
        self._seen_approvals: set[str] = set()

    def current(self, approval_id: str) -> ApprovalView | None:
        """The approval as it stands now (None once resolved or never seen)."""
        return self._approvals.get(approval_id)

    def withdraw_all(self) -> None:
        """Stop asking: pending permission requests and forms are withdrawn."""
        for scope in [*self._asking.values(), *self._questions.values()]:
            scope.cancel()

    def on_event(self, params: WireModel) -> None:
        """Take note of an approval or question event (must not block)."""
        if isinstance(params, msp.ApprovalRequestedParams):
            # Hosts may send an approval twice (the notification and the server request, which
            # is delivered from its own task and can arrive after later updates); only the
            # first is news, a repeat must not roll the approval back to its first stage.
            if params.approval_id not in self._seen_approvals:
                self._seen_approvals.add(params.approval_id)
                self._on_approval(ApprovalView.from_requested(params), params.turn_id)
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
        if turn_id is not None and self._turn.turn_id is not None and turn_id != self._turn.turn_id:
            return
        self._approvals[view.approval_id] = view
        if self._turn.tasks is None or self._turn.settled or self._turn.cancel_requested:
            return
        if view.approval_id not in self._asking and view.key not in self._asked:
            scope = anyio.CancelScope()
            self._asking[view.approval_id] = scope
            self._turn.tasks.start_soon(self._answer_approval, view.approval_id, scope)

    async def _answer_approval(self, approval_id: str, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                while (view := self._approvals.get(approval_id)) and view.key not in self._asked:
                    self._asked.add(view.key)
                    choice = await self._choose(view)
                    if choice is None:
                        return
                    current = self._approvals.get(approval_id)
                    if current is None or current.key != view.key:
                        continue  # the host moved on while the client decided
                    await self._decide(view, choice)
        finally:
            self._asking.pop(approval_id, None)

    async def _choose(self, view: ApprovalView) -> str | None:
        automatic = MODES[self._turn.session.settings.mode_id].automatic
        if automatic is not None:
            choice = automatic_choice(view, automatic)
            if choice is None:
                self._turn.fail(failures.automatic_unavailable(automatic))
            return choice
        requested = view.requested
        request = permission_request(
            self._turn.session.session_id,
            view,
            tool_call_id=requested.tool_call_id or requested.item_id,
            kind=kind_for_tool(requested.tool_name),
        )
        try:
            raw = await self._turn.ctx.acp.request("session/request_permission", request)
            response = acp.RequestPermissionResponse.model_validate(raw)
            return choice_from_response(view, response)
        except RpcError as error:
            self._turn.fail(failures.permission_failed(error.message))
        except ValueError as error:
            self._turn.fail(failures.permission_failed(str(error)))
        return None

    async def _decide(self, view: ApprovalView, choice: str) -> None:
        params = msp.ApprovalDecideParams(
            command_id=new_uuid7(),
            session_id=self._turn.session.session_id,
            approval_id=view.approval_id,
            requirement_id=view.requirement,
            choice_id=choice,
        )
        try:
            with anyio.fail_after(self._turn.ctx.config.deadlines.submit):
                await self._turn.host.call("approval/decide", params, msp.ApprovalDecideResult)
        except TimeoutError:
            submit = self._turn.ctx.config.deadlines.submit
            self._turn.fail(failures.deadline_exceeded("submitting", submit, True))
        except ConnectionClosed:
            pass  # the host is gone, not refusing: the turn reports how it ended
        except RpcError as error:
            if _error_kind(error) not in BENIGN_DECISION_ERRORS:
                self._turn.fail(
                    failures.host_rejected("approval/decide", error.code, error.message)
                )

    def _on_question(self, params: msp.UserInputRequestedParams) -> None:
        if params.turn_id != self._turn.turn_id and self._turn.turn_id is not None:
            return
        if self._turn.tasks is None or params.user_input_id in self._seen_questions:
            return
        self._seen_questions.add(params.user_input_id)
        scope = anyio.CancelScope()
        self._questions[params.user_input_id] = scope
        self._turn.tasks.start_soon(self._answer_question, params, scope)

    async def _answer_question(
        self, params: msp.UserInputRequestedParams, scope: anyio.CancelScope
    ) -> None:
        try:
            with scope:
                if not self._turn.ctx.negotiated.elicitation_form:
                    # Record the failure first: once the question is cancelled the host may
                    # finish the turn normally, which must not hide why it stopped.
                    self._turn.fail(failures.user_input_unsupported())
                    await self._cancel_question(params, "unsupported")
                    return
                raw = await self._turn.ctx.acp.request(
                    "elicitation/create", elicitation_request(self._turn.session.session_id, params)
                )
                response = acp.CreateElicitationResponse.model_validate(raw)
                try:
                    answers = answers_from_response(params, response)
                except ValueError as error:
                    self._turn.fail(failures.permission_failed(str(error)))
                    await self._cancel_question(params, "invalid")
                    return
                if answers is None:
                    await self._cancel_question(params, "declined")
                    return
                answer = msp.UserInputAnswerParams(
                    command_id=new_uuid7(),
                    session_id=self._turn.session.session_id,
                    user_input_id=params.user_input_id,
                    answers=answers,
                )
                with anyio.fail_after(self._turn.ctx.config.deadlines.submit):
                    await self._turn.host.call(
                        "userInput/answer", answer, msp.UserInputCommandResult
                    )
        except ConnectionClosed:
            pass  # the host is gone, not refusing: the turn reports how it ended
        except TimeoutError:
            # Only the host's acknowledgement is timed: Muse, not the client, failed to answer.
            submit = self._turn.ctx.config.deadlines.submit
            self._turn.fail(failures.deadline_exceeded("submitting", submit, True))
        except RpcError as error:
            self._turn.fail(failures.host_rejected("userInput/answer", error.code, error.message))
        except ValueError as error:
            self._turn.fail(failures.permission_failed(str(error)))
        finally:
            self._questions.pop(params.user_input_id, None)

    async def _cancel_question(self, params: msp.UserInputRequestedParams, why: CancelKind) -> None:
        cancel = msp.UserInputCancelParams(
            command_id=new_uuid7(),
            session_id=self._turn.session.session_id,
            user_input_id=params.user_input_id,
            reason=user_input_cancel_reason(why),
        )
        # Shielded: the turn may already be settling, and the host must still hear it.
        with anyio.CancelScope(shield=True):
            try:
                with anyio.fail_after(self._turn.ctx.config.deadlines.submit):
                    await self._turn.host.call(
                        "userInput/cancel", cancel, msp.UserInputCommandResult
                    )
            except (TimeoutError, RpcError) as error:
                logger.warning("userInput/cancel was not accepted: %s", error)
