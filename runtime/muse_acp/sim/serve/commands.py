"""Session commands: start, delete and the session settings.

Contract, per method (every one a command with a UUIDv7 ``commandId``): ``session/start``
makes a session held by this process (a retained id is ``session_id_conflict``; ``mcp`` checks
``config.mcpServers``) under the settings file's default permission profile, refused (-32603, as
``check_profile`` says) when that is ``:auto-review``, whose reviewer ``serve`` does not run;
``session/setModel``, ``session/setApprovalMode``, ``session/rename`` and
``session/setReasoningEffort`` change a setting and announce it where the version publishes the
notification; ``session/delete`` (experimental, where the schema has it) removes the session's
durable state and reports ``session/deleteCompleted`` after the acknowledgement. Errors as real
hosts answer them: -32601 ``experimentalRequired`` without the opt-in, -32020 for an unknown
session, -32021 ``sessionInUse`` while another process holds the lease; a session with a turn
running or queued is left alone (outcome ``failed``, reason ``writerBusy``).
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any, Final

from muse_acp.rpc import RequestContext, RequestRoute
from muse_acp.sim.serve.mcp import check_session_mcp
from muse_acp.sim.state import errors
from muse_acp.sim.state.catalog import DEFAULT_MODEL, MODELS, check_effort
from muse_acp.sim.state.context import HostContext
from muse_acp.sim.state.ids import is_uuid7, new_uuid7, rfc3339_now
from muse_acp.sim.state.profile import HostProfile
from muse_acp.sim.state.session import LiveSession, Position, take_roots
from muse_acp.sim.state.store import SessionMeta
from muse_acp_wire.msp import (
    ApprovalModeState,
    CommandAck,
    ErrorData,
    SessionApprovalModeChangedParams,
    SessionDeleteCompletedParams,
    SessionDeleteParams,
    SessionModelChangedParams,
    SessionNameChangedParams,
    SessionReasoningEffortChangedParams,
    SessionRenameParams,
    SessionRenameResult,
    SessionSetApprovalModeParams,
    SessionSetApprovalModeResult,
    SessionSetModelParams,
    SessionSetReasoningEffortParams,
    SessionStartParams,
    SessionStartResult,
)

__all__ = ["AUTO_REVIEW", "SessionCommands", "check_profile"]

DEFAULT_MODE: Final = "promptUnmatched"
AUTO_REVIEW: Final = ":auto-review"
"""The built-in permission profile whose automated reviewer ``serve`` does not run."""
SLUG: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_MODEL_IDS: Final = frozenset(model.model_id for model in MODELS)


def check_profile(profile: str | None) -> None:
    """Refuse to compose a session under ``profile`` when this host cannot run it.

    Raises:
        RpcError: -32603, the profile needs the automated reviewer.
    """
    if profile == AUTO_REVIEW:
        raise errors.reviewer_unavailable(profile)


class SessionCommands:
    """The session command handlers (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [
            RequestRoute("session/start", SessionStartParams, self.start),
            RequestRoute("session/setModel", SessionSetModelParams, self.set_model),
            RequestRoute(
                "session/setApprovalMode", SessionSetApprovalModeParams, self.set_approval_mode
            ),
            RequestRoute("session/rename", SessionRenameParams, self.rename),
            RequestRoute("session/delete", SessionDeleteParams, self.delete),
            RequestRoute(
                "session/setReasoningEffort",
                SessionSetReasoningEffortParams,
                self.set_reasoning_effort,
            ),
        ]

    def _mode_changed(
        self, session: LiveSession, command_id: str
    ) -> tuple[SessionApprovalModeChangedParams, bytes]:
        return session.record(
            "session/approvalModeChanged",
            lambda pos: SessionApprovalModeChangedParams.model_validate(
                {
                    "sessionId": session.session_id,
                    "viewCursor": pos.cursor,
                    "sourceRange": pos.source_range,
                    "mode": session.meta.approval_mode,
                    "source": "approvalReconfigure",
                    "commandId": command_id,
                    "clientName": self.ctx.client.name,
                }
            ),
        )

    async def start(
        self, params: SessionStartParams, request: RequestContext
    ) -> SessionStartResult:
        ctx = self.ctx
        session_id = params.session_id or new_uuid7()
        if params.session_id is not None and not is_uuid7(session_id):
            raise errors.invalid_params("invalid session/start sessionId: expected UUIDv7")
        if session_id in ctx.sessions or ctx.store.exists(session_id):
            raise errors.command_rejected("session/start", params.command_id, "session_id_conflict")
        check_session_mcp(ctx, "session/start", params.config)
        check_profile(ctx.options.default_profile)
        provider = params.provider_id or "meta"
        now = rfc3339_now()
        meta = SessionMeta(
            session_id=session_id,
            created_at=now,
            updated_at=now,
            workspace_root=params.workspace_root or str(Path.cwd()),
            provider_id=provider,
            model_id=params.model_id or (None if provider == "echo" else DEFAULT_MODEL),
            approval_mode=params.approval_mode or DEFAULT_MODE,
            permission_profile=ctx.options.default_profile,
        )
        roots = take_roots(ctx.profile, meta.workspace_root, params.workspace_roots)
        session = ctx.adopt(meta)
        session.roots = roots
        await session.announce(self.ctx.profile)
        mode = params.approval_mode
        if mode is not None and (mode != DEFAULT_MODE or ctx.profile.session_names):
            _, body = self._mode_changed(session, params.command_id)
            ctx.send_after(request, "session/approvalModeChanged", body)
        ctx.list_changed_after(request, session.meta)
        return SessionStartResult(
            session=session.model(self.ctx.profile), view_cursor=session.head_cursor
        )

    async def set_model(self, params: SessionSetModelParams, request: RequestContext) -> CommandAck:
        session = self.ctx.live(params.session_id)
        model = params.model
        provider = model.provider_id or "meta"
        # Echo sessions are bound to their provider: real hosts refuse to reroute them.
        echo = session.meta.provider_id == "echo"
        if echo or provider != "meta" or model.model_id not in _MODEL_IDS:
            raise errors.command_rejected(
                "session/setModel", params.command_id, "unsupported_route"
            )
        session.update(model_id=model.model_id, provider_id=provider)
        if not self.ctx.profile.publishes("session/modelChanged"):
            return CommandAck(command_id=params.command_id, status="accepted")
        _, body = session.record(
            "session/modelChanged",
            lambda pos: SessionModelChangedParams(
                session_id=session.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                model_id=model.model_id,
                provider_id=provider,
                source="user",
            ),
        )
        self.ctx.send_after(request, "session/modelChanged", body)
        return CommandAck(command_id=params.command_id, status="accepted")

    async def set_approval_mode(
        self, params: SessionSetApprovalModeParams, request: RequestContext
    ) -> SessionSetApprovalModeResult:
        session = self.ctx.live(params.session_id)
        meta = session.meta
        outcome = "noop"
        if params.mode != meta.approval_mode:
            outcome = "completed"
            meta = session.update(
                approval_mode=params.mode,
                approval_source="approvalReconfigure",
                approval_command_id=params.command_id,
            )
            _, body = self._mode_changed(session, params.command_id)
            await session.outbox.send_event("session/approvalModeChanged", body)
        return SessionSetApprovalModeResult(
            command_id=params.command_id,
            status="accepted",
            apply_outcome=outcome,
            effective_mode=ApprovalModeState.model_validate(
                {
                    "mode": meta.approval_mode,
                    "source": meta.approval_source,
                    "lastCommandId": meta.approval_command_id,
                }
            ),
        )

    async def rename(
        self, params: SessionRenameParams, request: RequestContext
    ) -> SessionRenameResult:
        session = self.ctx.live(params.session_id)
        if SLUG.fullmatch(params.name) is None:
            raise errors.invalid_params(
                "invalid session/rename name: expected a slug of lower-case letters, digits "
                "and hyphens"
            )
        session.update(name=params.name)

        def changed(pos: Position) -> SessionNameChangedParams:
            note = SessionNameChangedParams(
                session_id=session.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                name=params.name,
            )
            if self.ctx.profile.declares("SessionNameChangedParams", "command_id"):
                note.command_id = params.command_id
            return note

        _, body = session.record("session/nameChanged", changed)
        self.ctx.send_after(request, "session/nameChanged", body)
        self.ctx.list_changed_after(request, session.meta)
        return SessionRenameResult(
            command_id=params.command_id, status="accepted", name=params.name
        )

    async def set_reasoning_effort(
        self, params: SessionSetReasoningEffortParams, request: RequestContext
    ) -> CommandAck:
        session = self.ctx.live(params.session_id)
        check_effort(self.ctx.profile, session.meta.model_id, params.reasoning_effort)
        session.update(reasoning_effort=params.reasoning_effort)
        _, body = session.record(
            "session/reasoningEffortChanged",
            partial(_effort_changed, self.ctx.profile, session, params),
        )
        self.ctx.send_after(request, "session/reasoningEffortChanged", body)
        return CommandAck(command_id=params.command_id, status="accepted")

    async def delete(self, params: SessionDeleteParams, request: RequestContext) -> CommandAck:
        ctx = self.ctx
        if not ctx.client.experimental:
            raise errors.host_error(
                "session/delete requires the experimentalApi capability",
                ErrorData(kind="experimentalRequired", descriptor="session/delete"),
            )
        sid = params.session_id
        ack = CommandAck(command_id=params.command_id, status="accepted")
        live = ctx.sessions.get(sid)
        if live is not None and (live.runner is not None or live.queue):
            ctx.notify_after(
                request,
                "session/deleteCompleted",
                SessionDeleteCompletedParams(
                    session_id=sid,
                    command_id=params.command_id,
                    outcome="failed",
                    reason="writerBusy",
                    physical_change="none",
                ),
            )
            return ack
        meta = live.meta if live is not None else ctx.store.read_meta(sid)
        if meta is None:
            raise errors.session_not_found(sid)
        lease = live.lease if live is not None else ctx.store.acquire(sid)
        if lease is None:
            raise errors.session_in_use(sid)
        if live is not None:
            live.log.close()
            del ctx.sessions[sid]
        try:
            ctx.store.delete(sid)
        finally:
            lease.release()
        ctx.notify_after(
            request,
            "session/deleteCompleted",
            SessionDeleteCompletedParams(
                session_id=sid, command_id=params.command_id, outcome="completed"
            ),
        )
        ctx.list_changed_after(request, meta, status="notLoaded")
        return ack


def _effort_changed(
    profile: HostProfile,
    session: LiveSession,
    params: SessionSetReasoningEffortParams,
    pos: Position,
) -> SessionReasoningEffortChangedParams:
    """The note of a client's effort change, with the members the version's bundle declares:
    the command that caused it (older hosts) or who changed it (the user; from 1.4.2)."""
    note = SessionReasoningEffortChangedParams(
        session_id=session.session_id,
        view_cursor=pos.cursor,
        source_range=pos.source_range,
        reasoning_effort=params.reasoning_effort,
    )
    if profile.declares("SessionReasoningEffortChangedParams", "command_id"):
        note.command_id = params.command_id
    if profile.declares("SessionReasoningEffortChangedParams", "source"):
        note.source = "user"
    return note
