"""Questions to the user (``sim:ask``): the ``request_user_input`` tool call and its settling.

Contract: ``ask_user`` (turn side) starts a ``request_user_input`` tool call, then puts its
question to the client as real hosts do: the ``userInput/request`` server request (withheld
when the client declared ``userInputDialogs: false``), then the ``userInput/requested``
notification with the same params. ``QuestionAsk.answer`` and ``cancel`` (command side) check
and settle it at once (-32056 when already settled, -32057 when the answers do not fit the
questions); once that command's answer is written the turn emits ``userInput/settled``, completes
the tool call (``visibleOutput`` reports the outcome as JSON) and has an agent message report it.
A turn stopped while waiting settles the question ``interrupted``. A timed question
(``sim:timed-ask``) is settled ``timedOut`` when its countdown ends, unless a client engaged it
first (``engage``: ``userInput/engaged``, on the versions that take it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import anyio

from muse_acp.sim.model.tools import ToolCall, compact_json
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.options.faults import exit_now
from muse_acp.sim.state import errors
from muse_acp.sim.state.session import LiveSession, Position
from muse_acp_wire.msp import (
    ErrorData,
    UserInputAnswer,
    UserInputOption,
    UserInputQuestion,
    UserInputRequestedParams,
    UserInputSelection,
    UserInputSettledParams,
)

__all__ = ["QUESTION", "QuestionAsk", "ask_user", "await_answer", "engage", "hold_open"]

REQUEST_OUT_WAIT: Final = 5.0
TIMED_OUT: Final = "nobody answered before the countdown ended"
QUESTION: Final = UserInputQuestion(
    id="choice",
    header="Choice",
    question="Which option should the simulated model use?",
    selection=UserInputSelection(mode="single"),
    options=[UserInputOption(label="alpha"), UserInputOption(label="beta")],
)


@dataclass(frozen=True, slots=True)
class _Settlement:
    outcome: str
    answers: list[UserInputAnswer] | None
    reason: str | None
    command_id: str | None
    answered: anyio.Event | None


@dataclass(slots=True)
class QuestionAsk:
    """One ``request_user_input`` question (see the module contract)."""

    user_input_id: str
    questions: list[UserInputQuestion]
    settlement: _Settlement | None = None
    wake: anyio.Event = field(default_factory=anyio.Event)
    engaged: bool = False
    """A client said its user started on the question (``userInput/engaged``)."""

    def _check_open(self) -> None:
        if self.settlement is not None:
            raise errors.host_error(
                f"user input {self.user_input_id} is already settled",
                ErrorData(
                    kind="userInputAlreadySettled",
                    retryable=False,
                    user_input_id=self.user_input_id,
                ),
            )

    def _fits(self, answer: UserInputAnswer) -> bool:
        question = next((q for q in self.questions if q.id == answer.question_id), None)
        given = [answer.selected_label, answer.selected_labels, answer.free_text]
        if question is None or sum(value is not None for value in given) != 1:
            return False
        labels = {option.label for option in question.options or []}
        if answer.selected_label is not None:
            return not labels or answer.selected_label in labels
        if answer.selected_labels is not None:
            single = question.selection.mode == "single"
            chosen = answer.selected_labels
            return not (single and len(chosen) != 1) and (not labels or set(chosen) <= labels)
        return True

    def answer(
        self, answers: list[UserInputAnswer], command_id: str, answered: anyio.Event
    ) -> None:
        self._check_open()
        if not answers or not all(self._fits(answer) for answer in answers):
            raise errors.host_error(
                f"answers do not fit the questions of user input {self.user_input_id}",
                ErrorData(
                    kind="userInputAnswerInvalid",
                    retryable=False,
                    user_input_id=self.user_input_id,
                ),
            )
        self._settle(_Settlement("answered", answers, None, command_id, answered))

    def cancel(self, reason: str, command_id: str, answered: anyio.Event) -> None:
        self._check_open()
        self._settle(_Settlement("cancelled", None, reason, command_id, answered))

    async def count_down(self, seconds: float) -> None:
        """Settle the question ``timedOut`` after ``seconds`` unless a client engaged."""
        await anyio.sleep(seconds)
        if self.settlement is None and not self.engaged:
            self._settle(_Settlement("timedOut", None, TIMED_OUT, None, None))

    def _settle(self, settlement: _Settlement) -> None:
        self.settlement = settlement
        self.wake.set()


def _report(settlement: _Settlement) -> tuple[str, str]:
    """The tool's visible output and the agent's sentence about the outcome."""
    if settlement.outcome != "answered" or settlement.answers is None:
        return compact_json({"status": settlement.outcome}), "The question was not answered."
    rows: list[dict[str, object]] = []
    said: list[str] = []
    for answer in settlement.answers:
        if answer.selected_label is not None:
            rows.append({"id": answer.question_id, "selected_label": answer.selected_label})
            said.append(answer.selected_label)
        elif answer.selected_labels is not None:
            rows.append({"id": answer.question_id, "selected_labels": answer.selected_labels})
            said.append(", ".join(answer.selected_labels))
        else:
            rows.append({"id": answer.question_id, "free_text": answer.free_text})
            said.append(answer.free_text or "")
    return compact_json({"status": "answered", "answers": rows}), f"You answered: {'; '.join(said)}"


async def _settled(turn: Turn, ask: QuestionAsk, settlement: _Settlement) -> None:
    def build(pos: Position) -> UserInputSettledParams:
        params = UserInputSettledParams(
            session_id=turn.session_id,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            user_input_id=ask.user_input_id,
            outcome=settlement.outcome,
            answers=settlement.answers,
            clarification=None,
            reason=settlement.reason,
        )
        if settlement.command_id is not None:
            params.decided_by_command_id = settlement.command_id
        return params

    await turn.session.emit("userInput/settled", build)


async def ask_user(turn: Turn, countdown: float | None = None) -> None:
    """The ``sim:ask`` step, or with a ``countdown`` ``sim:timed-ask`` (see the contract)."""
    options = [{"label": option.label} for option in QUESTION.options or []]
    asked = {"header": QUESTION.header, "id": QUESTION.id, "options": options}
    args = {"questions": [{**asked, "question": QUESTION.question}]}
    call = ToolCall(turn, "request_user_input", compact_json(args))
    await turn.usage(call.args, final=False)
    await call.start()
    ask = QuestionAsk(user_input_id=call.item_id, questions=[QUESTION])
    session = turn.session
    session.asks[ask.user_input_id] = ask

    def requested(pos: Position) -> UserInputRequestedParams:
        return UserInputRequestedParams(
            session_id=turn.session_id,
            user_input_id=ask.user_input_id,
            turn_id=turn.turn_id,
            item_id=call.item_id,
            tool_call_id=call.call_id,
            tool_name="request_user_input",
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            questions=ask.questions,
        )

    await session.outbox.pace()
    params, body = session.record("userInput/requested", requested)
    done = anyio.Event()
    hold_open(turn, ask, done)
    if turn.ctx.client.user_input_dialogs:
        sent = turn.ctx.ledger.expect("userInput/request")
        turn.ctx.spawn(turn.ctx.ask_client, "userInput/request", params, done)
        with anyio.move_on_after(REQUEST_OUT_WAIT):
            await sent.wait()
    await session.outbox.send_event("userInput/requested", body)
    if countdown is not None:
        turn.ctx.spawn(ask.count_down, countdown)
    if turn.ctx.options.faults.exits_at("userInput"):
        exit_now("exit:userInput")
    await await_answer(turn, call, ask, done)


def hold_open(turn: Turn, ask: QuestionAsk, done: anyio.Event) -> None:
    """Register ``ask`` with its turn: a turn stopped before it is settled settles it
    ``interrupted`` (and sets ``done``)."""

    async def abandon() -> None:
        if ask.settlement is None:
            ask.settlement = _Settlement("interrupted", None, "the turn ended", None, None)
        done.set()
        await _settled(turn, ask, ask.settlement)

    # The question shares its id with its tool call, which has its own entry.
    turn.open_items[f"question:{ask.user_input_id}"] = abandon
    turn.phase = "waiting for an answer"


async def await_answer(turn: Turn, call: ToolCall, ask: QuestionAsk, done: anyio.Event) -> None:
    """Wait until ``ask`` (published, registered in the session's asks and ``hold_open``) is
    settled, then report it: ``userInput/settled``, the tool call's completion and the agent's
    sentence; ``done`` is set once it is settled."""
    try:
        await ask.wake.wait()
    finally:
        done.set()
    del turn.open_items[f"question:{ask.user_input_id}"]
    settlement = ask.settlement
    assert settlement is not None  # wake is only set by settling
    if settlement.answered is not None:
        with anyio.move_on_after(REQUEST_OUT_WAIT):
            await settlement.answered.wait()
    await _settled(turn, ask, settlement)
    visible, sentence = _report(settlement)
    status = "completed" if settlement.outcome == "answered" else "cancelled"
    await call.finish_with(status, visible)
    turn.phase = "the model was working"
    await turn.say(sentence)


def engage(session: LiveSession, user_input_id: str) -> None:
    """A client's ``userInput/engaged``: the question's countdown is disarmed (an unknown or
    settled question is ignored, as the notification has no answer)."""
    ask = session.asks.get(user_input_id)
    if isinstance(ask, QuestionAsk):
        ask.engaged = True
