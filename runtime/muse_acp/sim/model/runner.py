"""Running a turn of the fake model from ``turn/started`` to ``turn/completed``.

Contract: a ``TurnRunner`` plays one ``TurnRequest``. ``open`` emits ``turn/started``, the
``running`` status and the user message before the acknowledgement, as real hosts do (the
``ack-before-started`` and ``no-turn-started`` quirks change that). ``run`` waits until the
acknowledgement is written, then plays the prompt (reasoning, each directive in order, the agent
message echoing the prompt, usage) and ends with ``turn/completed``; steering input is answered
between steps. ``stop`` ends the turn early: open items complete ``cancelled``, pending asks are
settled, and ``turn/completed`` reports ``cancelled``. Either way the session is stored idle
before ``turn/completed`` is sent, so a client that sees the turn end finds nothing still
changing; then the session's next queued turn starts (or a goal's next, ``goal_turns``).
"""

from __future__ import annotations

from typing import Final

import anyio

from muse_acp.sim.model.approved_calls import run_approved_command, run_file_change
from muse_acp.sim.model.compacting import auto_compact
from muse_acp.sim.model.goal_turns import goal_again, pause_stopped_goal
from muse_acp.sim.model.notices import (
    miss_events,
    name_session,
    report_setting,
    status_changed,
    stray_request,
    switch_approval,
    switch_model,
    usage_changed,
    view_lost,
)
from muse_acp.sim.model.questions import ask_user
from muse_acp.sim.model.subagents import run_subagent
from muse_acp.sim.model.tools import (
    run_search,
    run_shell,
    run_timed,
    run_web,
)
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.model.turn_waits import announce, simulated_failure
from muse_acp.sim.model.workflow_runs import start_children_workflow
from muse_acp.sim.model.workflows import after_turn, start_background, start_workflow
from muse_acp.sim.options.faults import crash
from muse_acp.sim.script.directives import (
    Approve,
    AskUser,
    Background,
    Crash,
    Directive,
    Edit,
    Fail,
    Foreground,
    Hold,
    Paced,
    Plan,
    ProtectedWrite,
    Retry,
    Search,
    Shell,
    Spawn,
    Stream,
    Subagent,
    WebSearch,
    Workflow,
)
from muse_acp.sim.script.session_directives import (
    AutoCompact,
    Flags,
    Gap,
    Name,
    Roots,
    SwitchApproval,
    SwitchModel,
    ViewLost,
)
from muse_acp.sim.script.turn_requests import Steer, StopRequest, TurnRequest
from muse_acp.sim.state.catalog import effective_effort
from muse_acp.sim.state.context import HostContext
from muse_acp.sim.state.ids import now_ms, rfc3339_now
from muse_acp.sim.state.session import LiveSession, Position
from muse_acp_wire.msp import (
    TurnCompletedParams,
    TurnError,
    TurnRetractedParams,
    TurnStartedParams,
    UserMessageItem,
)

__all__ = ["ACK_WAIT", "TurnRunner"]

ACK_WAIT: Final = 5.0
"""Seconds a turn waits for its acknowledgement to be written before playing anyway."""
HOLD_MARK: Final = "sim:hold"


class TurnRunner:
    """See the module contract."""

    def __init__(self, ctx: HostContext, session: LiveSession, request: TurnRequest) -> None:
        self.ctx = ctx
        self.session = session
        self.turn = Turn(ctx, session, request)
        self._scope = anyio.CancelScope()
        self._stop: StopRequest | None = None
        self._message: UserMessageItem | None = None
        self._ending = False
        self._released = False
        """A correction that did not ask to keep holding was answered (and no hold used it)."""
        self._played_through = False
        self.done = anyio.Event()

    @property
    def turn_id(self) -> str:
        return self.turn.turn_id

    @property
    def ending(self) -> bool:
        """The turn has stopped playing and is reporting its end."""
        return self._ending

    @property
    def steering_backlog(self) -> int:
        """Steering inputs received and not answered yet."""
        return len(self.turn.steers)

    def steer(self, steer: Steer) -> None:
        self.turn.steer(steer)

    def stop(self, request: StopRequest) -> None:
        """End the turn early (no-op once it is already ending)."""
        if not self._ending and self._stop is None:
            self._stop = request
            self._scope.cancel()

    async def open(self) -> None:
        request = self.turn.request
        session = self.session

        def started(pos: Position) -> TurnStartedParams:
            return TurnStartedParams(
                session_id=session.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                turn_id=request.turn_id,
                command_id=request.command_id,
            )

        if self.ctx.options.quirks.no_turn_started:
            params, _ = session.record("turn/started", started)
        else:
            params = await session.emit("turn/started", started)
        await status_changed(self.ctx, session, "running", params.view_cursor)
        if request.goal:  # Muse woke it: no user message, and not the session's first prompt
            session.update(active_turn_id=request.turn_id)
            return
        self._message = await self.turn.user_message(request.text, request.command_id)
        first_prompt = session.meta.first_user_prompt or request.text
        session.update(active_turn_id=request.turn_id, first_user_prompt=first_prompt)

    async def launch(self) -> None:
        """Open and run a turn that was queued (nothing to acknowledge any more)."""
        await self.open()
        await self.run(None)

    async def run(self, acked: anyio.Event | None, *, open_after_ack: bool = False) -> None:
        """Play the turn once ``acked`` is set (and first ``open`` it, when asked to)."""
        failure: TurnError | None = None
        played = False
        try:
            if acked is not None:
                with anyio.move_on_after(ACK_WAIT):
                    await acked.wait()
            if open_after_ack:
                await self.open()
            with self._scope:
                failure = await self._play()
                played = True
            self._ending = True
            if played:
                self._played_through = failure is None
                cursor = await self._complete(failure)
                await self._settle(cursor)
            else:
                with anyio.CancelScope(shield=True):
                    cursor = await self._stopped()
                    await self._settle(cursor)
        finally:
            self.done.set()
        self._next()

    async def _settle(self, cursor: str) -> None:
        """What follows ``turn/completed``: the session goes idle unless a turn is queued, and
        the host observes its usage."""
        if not self.session.queue:
            await status_changed(self.ctx, self.session, "idle", cursor)
        await usage_changed(self.ctx)
        await after_turn(self.turn)

    async def _play(self) -> TurnError | None:
        turn = self.turn
        request = turn.request
        meta = self.session.meta
        named = request.effort or meta.reasoning_effort
        effort = effective_effort(self.ctx.profile, meta.model_id, named)
        if effort != "none":
            await turn.reasoning(f"Planning a reply with {effort or 'default'} reasoning effort.")
        stray = self.ctx.options.faults.stray_request
        if stray is not None:
            await stray_request(turn, stray)
        for directive in request.prompt.directives:
            await self._answer_steers()
            failure = await self._step(directive)
            if failure is not None:
                return failure
        await self._answer_steers()
        echo = "\n".join(part for part in (request.prompt.text, *request.images) if part)
        if echo:
            await turn.say(echo)
        await turn.usage(echo, final=True)
        return None

    async def _step(self, directive: Directive) -> TurnError | None:
        turn = self.turn
        match directive:
            case Shell():
                await run_shell(turn, directive)
            case Search():
                await run_search(turn, directive)
            case WebSearch():
                await run_web(turn, directive)
            case Approve():
                await run_approved_command(turn, directive)
            case ProtectedWrite() | Edit():
                await run_file_change(turn, directive)
            case Gap(count=count):
                await miss_events(turn, count)
            case Spawn() | Paced():
                await run_timed(turn, directive)
            case Name():
                await name_session(turn, directive)
            case ViewLost():
                await view_lost(turn)
            case SwitchModel(model_id=model_id):
                await switch_model(turn, model_id)
            case SwitchApproval(mode=mode):
                await switch_approval(turn, mode)
            case Workflow(text=text, children=children):
                await (start_children_workflow if children else start_workflow)(turn, text)
            case Subagent():
                await run_subagent(turn, directive)
            case Background(command=command):
                await start_background(turn, command)
            case AskUser(countdown=countdown):
                await ask_user(turn, countdown)
            case Hold():
                await self._hold()
            case Plan():
                await turn.plan()
            case AutoCompact():
                await auto_compact(turn)
            case Flags() | Roots():
                await report_setting(turn, directive)
            case Retry() | Foreground():
                await announce(turn, directive)
            case Stream(deltas=count):
                pieces = [f"t{index} " for index in range(count)]
                await turn.say("".join(pieces), pieces)
            case Fail(kind=kind):
                return simulated_failure(kind)
            case Crash():
                crash(["sim:crash: exiting in the middle of a turn"])
        return None

    async def _answer_steers(self) -> bool:
        """Answer pending steering input; True when one of them did not ask to keep holding."""
        release = False
        for steer in self.turn.take_steers():
            await self.turn.user_message(steer.text, steer.command_id, steered=True)
            await self.turn.say(f'Steering received: "{steer.text}"')
            release = release or HOLD_MARK not in steer.text
        self._released = self._released or release
        return release

    async def _hold(self) -> None:
        self.turn.phase = "the model was working"
        # A correction answered between steps, before the hold began, already released it.
        while not self._released:
            await self.turn.steered.wait()
            await self._answer_steers()
        self._released = False

    def _completed(self, pos: Position, terminal: str, **members: object) -> TurnCompletedParams:
        turn = self.turn
        fields: dict[str, object] = {
            "session_id": turn.session_id,
            "view_cursor": pos.cursor,
            "source_range": pos.source_range,
            "turn_id": turn.turn_id,
            "terminal": terminal,
            **members,
            "duration_ms": max(1, now_ms() - turn.started_ms),
        }
        if turn.first_token_ms is not None:
            fields["time_to_first_token_ms"] = max(1, turn.first_token_ms - turn.started_ms)
        return TurnCompletedParams.model_validate(fields, by_name=True)

    async def _complete(self, failure: TurnError | None) -> str:
        """Record ``turn/completed``, then end the turn; returns its cursor."""
        if failure is None:
            params, body = self.session.record(
                "turn/completed", lambda pos: self._completed(pos, "completed")
            )
        else:
            params, body = self.session.record(
                "turn/completed",
                lambda pos: self._completed(pos, "failed", reason=failure.message, error=failure),
            )
        await self._end([("turn/completed", body)])
        return params.view_cursor

    async def _stopped(self) -> str:
        """Close what is open, record ``turn/completed`` ``cancelled`` (and the retraction a stop
        asked for), then end the turn; returns its cursor."""
        turn = self.turn
        for cleanup in reversed(list(turn.open_items.values())):
            await cleanup()
        turn.open_items.clear()
        if turn.request.goal:
            await pause_stopped_goal(self.session)
        reason = f"cancelled while {turn.phase}"
        params, body = self.session.record(
            "turn/completed", lambda pos: self._completed(pos, "cancelled", reason=reason)
        )
        ending = [("turn/completed", body)]
        stop = self._stop
        if stop is not None and stop.interrupt and stop.retract and self._message is not None:
            ending += self._retraction(self._message)
        await self._end(ending)
        return params.view_cursor

    async def _end(self, recorded: list[tuple[str, bytes]]) -> None:
        # The session is stored as idle before its end is announced, as a host writes a turn's
        # end down before telling anyone: a client that saw the turn end finds nothing still
        # changing in the session's files.
        self.session.update(active_turn_id=None, turn_count=self.session.fold.turn_count)
        await self.session.send_recorded(recorded)

    def _retraction(self, message: UserMessageItem) -> list[tuple[str, bytes]]:
        session = self.session
        request = self.turn.request
        _, retracted_turn = session.record(
            "turn/retracted",
            lambda pos: TurnRetractedParams(
                session_id=session.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                turn_id=request.turn_id,
                command_id=request.command_id,
            ),
        )
        retracted = message.model_copy(
            update={"revision": 2, "retracted": True, "recorded_at": rfc3339_now()}
        )
        _, retracted_message = self.turn.record_item("item/updated", retracted)
        return [("turn/retracted", retracted_turn), ("item/updated", retracted_message)]

    def _next(self) -> None:
        session = self.session
        if session.runner is self:
            session.runner = None
        if session.runner is None:
            done = self.turn.request if self._played_through else None
            request = session.queue.popleft() if session.queue else goal_again(session, done)
            if request is not None:
                session.runner = runner = TurnRunner(self.ctx, session, request)
                self.ctx.spawn(runner.launch)
