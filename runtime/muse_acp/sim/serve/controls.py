"""Turn commands and the client's answers to what a turn asked.

Contract, per method (all commands, on a session held by this process): ``turn/start`` starts a
turn (or, on an idle session whose goal asks it, queues it behind a goal turn Muse starts by
itself: ``goal_turns.prompted_goal_turn``), or while one runs queues it, steers it or replaces
it, as ``ifBusy`` says (beyond
``MAX_QUEUED`` turns or ``MAX_STEERS`` steering inputs: ``runtime_busy``); ``turn/steer`` gives
input to the running turn named by ``expectedTurnId`` (-32030 ``commandRejected`` otherwise);
``turn/cancel`` / ``turn/interrupt`` end the running turn ``cancelled`` or drop a queued one, and
``turn/unqueue`` drops a queued one. A ``reasoningEffort`` the session's model lacks is refused
(``catalog.check_effort``). ``approval/decide``, ``userInput/answer`` and
``userInput/cancel`` go to ``asks`` and ``questions`` (-32050 / -32055 for unknown ids, -32051 /
-32056 once settled).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from functools import partial
from typing import Any, Final

import anyio

from muse_acp.rpc import RequestContext, RequestRoute
from muse_acp.sim.model.asks import ApprovalAsk
from muse_acp.sim.model.goal_turns import prompted_goal_turn
from muse_acp.sim.model.questions import QuestionAsk
from muse_acp.sim.model.runner import TurnRunner
from muse_acp.sim.options.faults import exit_now
from muse_acp.sim.script.directives import parse_prompt
from muse_acp.sim.script.turn_requests import Steer, StopRequest, TurnRequest
from muse_acp.sim.state import errors
from muse_acp.sim.state.catalog import check_effort
from muse_acp.sim.state.context import ANSWER_WAIT, HostContext
from muse_acp.sim.state.session import LiveSession, RunningTurn, take_roots
from muse_acp_wire.msp import (
    ApprovalDecideParams,
    ApprovalDecideResult,
    ApprovalResolutionSummary,
    ErrorData,
    SkillTurnInputPart,
    TextTurnInputPart,
    TurnCancelParams,
    TurnCommandResult,
    TurnInputPart,
    TurnInterruptParams,
    TurnStartParams,
    TurnStartResult,
    TurnSteerParams,
    TurnUnqueuedParams,
    TurnUnqueueParams,
    UserInputAnswerParams,
    UserInputCancelParams,
    UserInputCommandResult,
)

__all__ = ["MAX_QUEUED", "MAX_STEERS", "TurnControls", "read_input"]

MAX_QUEUED: Final = 16
"""Turns a session queues behind the running one; more are refused ``runtime_busy``."""
MAX_STEERS: Final = 64
"""Steering inputs a turn holds before it answers them; more are refused ``runtime_busy``."""


def read_input(
    parts: Sequence[TurnInputPart], method: str, *, skills: bool = True
) -> tuple[str, tuple[str, ...], tuple[dict[str, object], ...]]:
    """The text of turn input, how its images and skills are echoed, and the images'
    attachment records. ``skills`` is False for a host version without skill input parts."""
    texts: list[str] = []
    echoes: list[str] = []
    attachments: list[dict[str, object]] = []
    for part in parts:
        if isinstance(part, TextTurnInputPart):
            texts.append(part.text)
            continue
        if isinstance(part, SkillTurnInputPart):
            if not skills:
                raise errors.invalid_params(
                    f"invalid {method} input: this host has no skill input parts"
                )
            echoes.append(
                f"[skill {part.selector}{' ' + part.arguments if part.arguments else ''}]"
            )
            continue
        if (part.width is None) != (part.height is None):
            raise errors.invalid_params(f"invalid {method} input: give width and height together")
        try:
            size = len(base64.b64decode(part.base64_data, validate=True))
        except (binascii.Error, ValueError):
            raise errors.invalid_params(
                f"invalid {method} input: image base64Data is not valid base64"
            ) from None
        echoes.append(f"[image {part.media_type}, {size} bytes]")
        record: dict[str, object] = {"mediaType": part.media_type, "byteLen": size}
        if part.width is not None and part.height is not None:
            record.update(width=part.width, height=part.height)
        attachments.append(record)
    return "\n".join(texts), tuple(echoes), tuple(attachments)


class TurnControls:
    """The turn command handlers (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [
            RequestRoute("turn/start", TurnStartParams, self.start),
            RequestRoute("turn/steer", TurnSteerParams, self.steer),
            RequestRoute("turn/cancel", TurnCancelParams, self.cancel),
            RequestRoute("turn/interrupt", TurnInterruptParams, self.interrupt),
            RequestRoute("turn/unqueue", TurnUnqueueParams, self.unqueue),
            RequestRoute("approval/decide", ApprovalDecideParams, self.decide),
            RequestRoute("userInput/answer", UserInputAnswerParams, self.answer),
            RequestRoute("userInput/cancel", UserInputCancelParams, self.cancel_input),
        ]

    async def start(self, params: TurnStartParams, request: RequestContext) -> TurnStartResult:
        ctx = self.ctx
        session = ctx.live(params.session_id)
        text, echoes, attachments = read_input(
            params.input, "turn/start", skills=self.ctx.profile.skill_input
        )
        check_effort(ctx.profile, session.meta.model_id, params.reasoning_effort)
        if params.workspace_roots and params.if_busy == "steer" and ctx.profile.workspace_roots:
            raise errors.invalid_params("workspaceRoots cannot be sent with ifBusy steer")
        roots = take_roots(ctx.profile, session.meta.workspace_root, params.workspace_roots)
        session.roots = roots or session.roots
        cid = params.command_id
        turn = TurnRequest(
            turn_id=cid,
            command_id=cid,
            text=text,
            prompt=parse_prompt(text),
            images=echoes,
            attachments=attachments,
            display_text=params.display_text,
            effort=params.reasoning_effort,
        )
        running = session.runner
        if running is not None and running.ending:
            # Its turn/completed may already be out: let it finish rather than queue behind it.
            with anyio.move_on_after(ANSWER_WAIT):
                await running.done.wait()
            running = session.runner
        own = prompted_goal_turn(session) if running is None else None
        if own is not None:
            running = session.runner = TurnRunner(ctx, session, own)  # the prompt queues
            ctx.spawn(self._launch_after, ctx.answered(request), running)
        if running is not None:
            mode = params.if_busy or "queue"
            if len(session.queue) >= MAX_QUEUED or running.steering_backlog >= MAX_STEERS:
                raise errors.command_rejected("turn/start", cid, "runtime_busy")
            if mode == "steer":
                running.steer(Steer("\n".join((text, *echoes)), cid))
                return self._started(cid, running.turn_id, "steered")
            if mode == "replace":
                session.queue.appendleft(turn)
                running.stop(StopRequest(interrupt=True, retract=False, command_id=cid))
                return self._started(cid, cid, "started")
            session.queue.append(turn)
            return self._started(cid, cid, "queued")
        runner = TurnRunner(ctx, session, turn)
        session.runner = runner
        if ctx.options.quirks.ack_before_started:
            ctx.spawn(partial(runner.run, ctx.answered(request), open_after_ack=True))
        else:
            await runner.open()
            ctx.spawn(runner.run, ctx.answered(request))
        return self._started(cid, cid, "started")

    @staticmethod
    async def _launch_after(answered: anyio.Event, runner: TurnRunner) -> None:
        """Run Muse's own goal turn once the prompt's ``turn/start`` is answered."""
        with anyio.move_on_after(ANSWER_WAIT):
            await answered.wait()
        await runner.launch()

    @staticmethod
    def _started(command_id: str, turn_id: str, disposition: str) -> TurnStartResult:
        return TurnStartResult(
            command_id=command_id,
            status="accepted",
            turn_id=turn_id,
            started_new_turn=disposition == "started",
            disposition=disposition,
        )

    async def steer(self, params: TurnSteerParams, _: RequestContext) -> TurnCommandResult:
        if self.ctx.options.faults.exits_at("steer"):
            exit_now("exit:steer")
        session = self.ctx.live(params.session_id)
        runner = session.runner
        if runner is None or runner.turn_id != params.expected_turn_id:
            reason = "missing_run" if runner is None else "invalid_target"
            raise errors.command_rejected("turn/steer", params.command_id, reason)
        if runner.steering_backlog >= MAX_STEERS:
            raise errors.command_rejected("turn/steer", params.command_id, "runtime_busy")
        text, echoes, _attachments = read_input(
            params.input, "turn/steer", skills=self.ctx.profile.skill_input
        )
        check_effort(self.ctx.profile, session.meta.model_id, params.reasoning_effort)
        runner.steer(Steer("\n".join(part for part in (text, *echoes) if part), params.command_id))
        return TurnCommandResult(
            command_id=params.command_id, status="accepted", turn_id=runner.turn_id
        )

    async def cancel(self, params: TurnCancelParams, request: RequestContext) -> TurnCommandResult:
        return await self._stop(
            "turn/cancel", params.session_id, params.turn_id, params.command_id, request
        )

    async def interrupt(
        self, params: TurnInterruptParams, request: RequestContext
    ) -> TurnCommandResult:
        retract = bool(params.retract)
        return await self._stop(
            "turn/interrupt", params.session_id, params.turn_id, params.command_id, request, retract
        )

    async def _stop(
        self,
        method: str,
        session_id: str,
        turn_id: str | None,
        command_id: str,
        request: RequestContext,
        retract: bool | None = None,
    ) -> TurnCommandResult:
        session = self.ctx.live(session_id)
        runner = session.runner
        target = turn_id or (runner.turn_id if runner is not None else None)
        if runner is not None and target == runner.turn_id:
            stop = StopRequest(
                interrupt=retract is not None, retract=bool(retract), command_id=command_id
            )
            self.ctx.spawn(self._stop_after, self.ctx.answered(request), runner, stop)
            return TurnCommandResult(command_id=command_id, status="accepted", turn_id=target)
        if target is not None and await self._drop_queued(session, target):
            return TurnCommandResult(command_id=command_id, status="accepted", turn_id=target)
        raise errors.command_rejected(method, command_id, "missing_run")

    @staticmethod
    async def _stop_after(answered: anyio.Event, runner: RunningTurn, stop: StopRequest) -> None:
        with anyio.move_on_after(ANSWER_WAIT):
            await answered.wait()
        runner.stop(stop)

    async def _drop_queued(self, session: LiveSession, turn_id: str) -> bool:
        queued = next((turn for turn in session.queue if turn.turn_id == turn_id), None)
        if queued is None:
            return False
        session.queue.remove(queued)
        await session.emit(
            "turn/unqueued",
            lambda pos: TurnUnqueuedParams(
                session_id=session.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                turn_id=queued.turn_id,
                command_id=queued.command_id,
            ),
        )
        return True

    async def unqueue(self, params: TurnUnqueueParams, _: RequestContext) -> TurnCommandResult:
        session = self.ctx.live(params.session_id)
        if not await self._drop_queued(session, params.turn_id):
            running = session.runner is not None and session.runner.turn_id == params.turn_id
            reason = "run_active" if running else "missing_run"
            raise errors.command_rejected("turn/unqueue", params.command_id, reason)
        return TurnCommandResult(
            command_id=params.command_id, status="accepted", turn_id=params.turn_id
        )

    async def decide(
        self, params: ApprovalDecideParams, request: RequestContext
    ) -> ApprovalDecideResult:
        session = self.ctx.live(params.session_id)
        ask = session.asks.get(params.approval_id)
        resolution = session.fold.resolutions.get(params.approval_id)
        if not isinstance(ask, ApprovalAsk) and resolution is not None:
            # Resolved by an earlier host process: only the log remembers it.
            raise errors.host_error(
                f"approval {params.approval_id} is already settled",
                ErrorData(
                    kind="approvalAlreadyResolved",
                    retryable=False,
                    approval_id=params.approval_id,
                    resolution=ApprovalResolutionSummary(
                        decision=resolution.decision,
                        resolved_by=resolution.resolved_by,
                        view_cursor=resolution.cursor,
                    ),
                ),
            )
        if not isinstance(ask, ApprovalAsk):
            raise errors.host_error(
                f"there is no pending approval {params.approval_id}",
                ErrorData(kind="approvalNotFound", retryable=False, approval_id=params.approval_id),
            )
        terminal = ask.decide(
            params.requirement_id, params.choice_id, params.command_id, self.ctx.answered(request)
        )
        return ApprovalDecideResult(
            command_id=params.command_id,
            status="accepted",
            approval_id=params.approval_id,
            terminal=terminal,
        )

    def _question(self, session_id: str, user_input_id: str) -> QuestionAsk:
        session = self.ctx.live(session_id)
        ask = session.asks.get(user_input_id)
        if not isinstance(ask, QuestionAsk):
            raise errors.host_error(
                f"there is no pending question {user_input_id}",
                ErrorData(kind="userInputNotFound", retryable=False, user_input_id=user_input_id),
            )
        return ask

    async def answer(
        self, params: UserInputAnswerParams, request: RequestContext
    ) -> UserInputCommandResult:
        ask = self._question(params.session_id, params.user_input_id)
        ask.answer(params.answers, params.command_id, self.ctx.answered(request))
        return UserInputCommandResult(
            command_id=params.command_id, status="accepted", user_input_id=params.user_input_id
        )

    async def cancel_input(
        self, params: UserInputCancelParams, request: RequestContext
    ) -> UserInputCommandResult:
        ask = self._question(params.session_id, params.user_input_id)
        ask.cancel(params.reason, params.command_id, self.ctx.answered(request))
        return UserInputCommandResult(
            command_id=params.command_id, status="accepted", user_input_id=params.user_input_id
        )
