"""A turn another host process left waiting on the user, taken up by the host that resumes it.

Contract: a turn that waits only on the user (an approval or a question) loses nothing when its
host process goes away: the question is in the log, the model waits for the answer. So the
process that resumes such a session owns the turn from then on (``adopt``): an ``AdoptedTurn``
becomes the session's runner, its pending approvals and questions are put back as they stood
(the stage an approval had reached, the questions asked), and the resume re-sends them
(``resume``). Once the resume's answer is written the turn waits for each answer in turn and
applies it as the original step would have: an approved command runs, a denied or aborted one
fails, an answered question is reported; then the turn ends with the agent's reply and
``turn/completed``, as a played turn does (the prompt's later directives are not played: the
script's position is not stored). ``turn/cancel`` and ``turn/interrupt`` stop it like any turn.
"""

from __future__ import annotations

from typing import Any

import anyio

from muse_acp.sim.model.approval_events import await_decision
from muse_acp.sim.model.approved_calls import APPROVAL_CANCELLED, DENIED_BY_POLICY
from muse_acp.sim.model.asks import ApprovalAsk
from muse_acp.sim.model.outputs import TEXT_MEDIA_TYPE
from muse_acp.sim.model.questions import QuestionAsk, await_answer, hold_open
from muse_acp.sim.model.runner import TurnRunner
from muse_acp.sim.model.tools import ToolCall
from muse_acp.sim.script.directives import parse_prompt
from muse_acp.sim.script.turn_requests import TurnRequest
from muse_acp.sim.state.context import HostContext
from muse_acp.sim.state.session import LiveSession
from muse_acp_wire.msp import TurnError, UserInputQuestion

__all__ = ["AdoptedTurn", "adopt"]


def _request(session: LiveSession, turn_id: str) -> TurnRequest:
    """The turn's request as its log records it: its id, command and user message."""
    fold = session.fold
    text = next(
        (
            str(item.get("text") or "")
            for item in fold.items.values()
            if item.get("turnId") == turn_id
            and item.get("kind") == "userMessage"
            and not item.get("steered")
        ),
        "",
    )
    command_id = fold.active_command or turn_id
    return TurnRequest(turn_id=turn_id, command_id=command_id, text=text, prompt=parse_prompt(text))


class AdoptedTurn(TurnRunner):
    """The rest of a turn a lost host left waiting on the user (see the module contract)."""

    def __init__(self, ctx: HostContext, session: LiveSession, turn_id: str) -> None:
        super().__init__(ctx, session, _request(session, turn_id))
        self._waiting = [dict(pending.params) for pending in session.fold.pending.values()]
        self._kinds = [pending.kind for pending in session.fold.pending.values()]

    async def _play(self) -> TurnError | None:
        for kind, params in zip(self._kinds, self._waiting, strict=True):
            if kind == "approval":
                await self._approval(params)
            else:
                await self._question(params)
            await self._answer_steers()
        text = self.turn.request.prompt.text
        if text:
            await self.turn.say(text)
        await self.turn.usage(text, final=True)
        return None

    def _call(self, item_id: str) -> ToolCall | None:
        stored = self.session.fold.items.get(item_id)
        if stored is None or stored.get("kind") != "toolCall":
            return None
        return ToolCall.taken_up(self.turn, stored)

    async def _approval(self, params: dict[str, Any]) -> None:
        ask = ApprovalAsk.from_pending(params, reasons=self.ctx.profile.change_reasons)
        self.session.asks[ask.approval_id] = ask
        call = self._call(ask.item_id)
        decision = await await_decision(self.turn, ask, anyio.Event())
        if call is None:
            return
        if decision in ("approved", "approvedForSession"):
            await call.update()
            if ask.tool_name == "bash":
                call.store(TEXT_MEDIA_TYPE)
                await call.stream([f"simulated run of: {ask.command}\n".encode()])
                await call.finish()
            else:
                await call.finish_with("completed", f"{ask.tool_name} applied to {ask.path}")
        elif decision == "denied":
            await call.finish_with("rejected", DENIED_BY_POLICY)
        else:
            await call.finish_with("failed", APPROVAL_CANCELLED)

    async def _question(self, params: dict[str, Any]) -> None:
        questions = [UserInputQuestion.model_validate(q) for q in params["questions"]]
        ask = QuestionAsk(user_input_id=params["userInputId"], questions=questions)
        self.session.asks[ask.user_input_id] = ask
        call = self._call(params["itemId"])
        done = anyio.Event()
        hold_open(self.turn, ask, done)
        if call is None:
            call = ToolCall(self.turn, "request_user_input", "{}")
            await call.start()
        await await_answer(self.turn, call, ask, done)


def adopt(ctx: HostContext, session: LiveSession, answered: anyio.Event) -> None:
    """Make this process the owner of the session's turn that waits on the user; it goes on
    once ``answered`` (the resume's answer written) is set."""
    turn_id = session.fold.active_turn
    assert turn_id is not None
    assert session.runner is None
    runner = AdoptedTurn(ctx, session, turn_id)
    session.runner = runner
    ctx.spawn(runner.run, answered)
