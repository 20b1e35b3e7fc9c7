"""Commands that hand a session's history back: ``session/resume`` and ``session/fork``.

Contract: ``session/resume`` checks ``config.mcpServers`` as ``mcp`` says, then holds a stored
session (-32020 unknown, -32603 created under a profile ``commands.check_profile`` refuses,
-32021 held by another process; resuming one this process holds is allowed). A turn left
unfinished by a host that died is taken up when it waits only on the user (``adoption``), else
closed (``recovery``). History comes inline, excluded (``excludeItems``), or as the durable
events after ``cursor``, sent once the result is written (-32011 for a cursor the session never
had); then every pending request is sent again, and a goal turn Muse starts on a resume
(``goal_turns.resumed_goal_turn``) starts. ``session/fork`` makes a new session, held by this
process, with the items of the source's completed turns (up to ``cutPoint``; -32023 when that
is not one of its turns, or, on a version that breaks earlier cuts as 1.4.4 does, not its last
one); any stored session can be forked, even one another process holds; the fork keeps the
source's permission profile. ``session/started`` precedes the result where the version
publishes it; ``session/listChanged`` follows it on a connection that streams the session list.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import anyio

from muse_acp.rpc import RawJson, RequestContext, RequestRoute, encode_message
from muse_acp.sim.model.adoption import adopt
from muse_acp.sim.model.goal_turns import resumed_goal_turn
from muse_acp.sim.model.recovery import reconcile
from muse_acp.sim.model.runner import TurnRunner
from muse_acp.sim.serve.commands import check_profile
from muse_acp.sim.serve.mcp import check_session_mcp
from muse_acp.sim.serve.reads import history, pending_requests
from muse_acp.sim.state import errors
from muse_acp.sim.state.context import ANSWER_WAIT, HostContext
from muse_acp.sim.state.ids import new_uuid7, parse_cursor, rfc3339_now
from muse_acp.sim.state.session import LiveSession, Position
from muse_acp.sim.state.store import SessionMeta
from muse_acp_wire.msp import (
    ErrorData,
    ItemEventParams,
    SessionForkParams,
    SessionHistory,
    SessionHistoryResult,
    SessionResumeParams,
)

__all__ = ["SessionContinuations"]


def _copied(session_id: str, item: dict[str, Any], pos: Position) -> ItemEventParams:
    """An item of the source session, recorded as completed in its fork."""
    return ItemEventParams.model_validate(
        {
            "sessionId": session_id,
            "viewCursor": pos.cursor,
            "sourceRange": pos.source_range,
            "item": item,
        }
    )


class SessionContinuations:
    """The ``session/resume`` and ``session/fork`` handlers (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [
            RequestRoute("session/resume", SessionResumeParams, self.resume),
            RequestRoute("session/fork", SessionForkParams, self.fork),
        ]

    async def resume(
        self, params: SessionResumeParams, request: RequestContext
    ) -> SessionHistoryResult:
        ctx = self.ctx
        check_session_mcp(ctx, "session/resume", params.config)
        fresh = params.session_id not in ctx.sessions
        if fresh:
            check_profile(ctx.meta_of(params.session_id).permission_profile)
        session = ctx.load(params.session_id)
        answered = ctx.answered(request)
        if session.fold.active_turn is not None and session.runner is None:
            if session.fold.pending:
                adopt(ctx, session, answered)  # waiting on the user: nothing was lost
            else:
                await reconcile(session)
        after: int | None = None
        if params.cursor is not None:
            after = parse_cursor(session.session_id, params.cursor)
            if after is None or after > session.fold.head:
                raise errors.host_error(
                    f"cursor {params.cursor} is not a position of session {session.session_id}",
                    ErrorData(
                        kind="notFound",
                        reason="missingAnchor",
                        session_id=session.session_id,
                        anchor=params.cursor,
                    ),
                )
        if after is not None:
            result_history = SessionHistory(
                mode="none", items=None, snapshot=None, none_reason="cursorSuffix"
            )
        else:
            result_history = history(session.fold, exclude=bool(params.exclude_items))
        pending = [(entry.kind, dict(entry.params)) for entry in session.fold.pending.values()]
        goal_turn = resumed_goal_turn(session) if fresh else None
        runner = None if goal_turn is None else TurnRunner(ctx, session, goal_turn)
        if runner is not None:
            session.runner = runner  # taken at once: a turn/start now queues behind it
        if after is not None or pending or runner is not None:
            ctx.spawn(self._after_result, answered, session, after, pending, runner)
        return SessionHistoryResult(
            session=session.model(self.ctx.profile),
            view_cursor=session.head_cursor,
            history=result_history,
            pending_requests=pending_requests(session.fold),
        )

    async def _after_result(
        self,
        answered: anyio.Event,
        session: LiveSession,
        after: int | None,
        pending: list[tuple[str, dict[str, Any]]],
        runner: TurnRunner | None,
    ) -> None:
        """Once the resume's answer is written: the events after its cursor, then every request
        still pending, sent again (each reply, whatever it is, is only a receipt), then the
        goal's turn Muse starts by itself, if any."""
        with anyio.move_on_after(ANSWER_WAIT):
            await answered.wait()
        if after is not None:
            for line in session.log.lines()[after:]:
                event = json.loads(line)
                await self.ctx.outbox.send_event(event["method"], encode_message(event["params"]))
        for kind, params in pending:
            method = "approval/request" if kind == "approval" else "userInput/request"
            if kind == "userInput" and not self.ctx.client.user_input_dialogs:
                continue  # withheld from a client that said it shows no question dialogs
            self.ctx.spawn(self.ctx.reissue, method, RawJson(encode_message(params)))
        if runner is not None:
            await runner.launch()

    async def fork(
        self, params: SessionForkParams, request: RequestContext
    ) -> SessionHistoryResult:
        ctx = self.ctx
        source = ctx.view(params.session_id)
        turns = [turn for turn in source.fold.turn_ends if turn not in source.fold.retracted]
        explicit = params.cut_point is not None
        if params.cut_point is not None:
            last = params.cut_point.last_turn_id
            # Some versions refuse any cut but the newest turn (see VersionFacts).
            latest_only = ctx.profile.facts.fork_after_last_turn_only
            if last not in turns or (latest_only and last != turns[-1]):
                raise errors.host_error(
                    f"turn {last} is not a completed turn of session {params.session_id}",
                    ErrorData(
                        kind="forkBoundaryInvalid",
                        retryable=False,
                        session_id=params.session_id,
                        last_turn_id=last,
                    ),
                )
            turns = turns[: turns.index(last) + 1]
        now = rfc3339_now()
        origin = {
            "sessionId": params.session_id,
            "cutCursor": f"session:{params.session_id}:turn:{len(turns)}",
            "cutExplicit": explicit,
            "commandId": params.command_id,
        }
        meta = SessionMeta(
            session_id=new_uuid7(),
            created_at=now,
            updated_at=now,
            workspace_root=source.meta.workspace_root,
            provider_id=source.meta.provider_id,
            model_id=source.meta.model_id,
            approval_mode=source.meta.approval_mode,
            turn_count=len(turns),
            forked_from=origin,
            reasoning_effort=source.meta.reasoning_effort,
            permission_profile=source.meta.permission_profile,
        )
        session = ctx.adopt(meta)
        for item in source.fold.turn_items(turns):
            session.record("item/completed", partial(_copied, session.session_id, item))
        await session.announce(self.ctx.profile)
        ctx.list_changed_after(request, session.meta)
        return SessionHistoryResult(
            session=session.model(self.ctx.profile),
            view_cursor=session.head_cursor,
            history=history(session.fold, exclude=bool(params.exclude_items)),
            pending_requests=[],
        )
