"""Lease-free reads: sessions, history pages, stored output, models and pending requests.

Contract: these requests work on any stored session, including one another host process holds
(they never take a lease and never write): ``session/read`` (history excluded unless asked for),
``session/list`` (subagents' sessions too from 1.4.4, with ``kind`` ``subagent`` and
``parentSessionId``, none before; most recently updated first, ``limit`` 1..200 default
50, opaque ``nextCursor``, null on the last page, optional ``workspaceRoot`` filter),
``view/page`` (durable events only, ascending in both directions, ``limit`` 1..1000,
``nextCursor`` null when nothing further), ``item/readOutput`` (1.2.1), ``model/list``,
``approval/listPending``, ``view/unsubscribe``, ``usage/read`` (1.3.0; ``{}`` until the host has
observed usage at the end of a turn, then ``{usage}``, the figures ``usage/changed`` last sent)
and the experimental ``account/read`` (-32601 ``experimentalRequired`` unless the connection
opted in with ``experimentalApi``; else ``envKey`` when ``META_API_KEY`` is set, the credential
``muse-sim login`` stored, or ``loggedOut``; a credential is always required). ``history`` and
``pending_requests`` also shape resume and fork results.
"""

from __future__ import annotations

from typing import Any, Final

from muse_acp.rpc import RawJson, RequestContext, RequestRoute, encode_message
from muse_acp.sim.model.outputs import MAX_READ_BYTES, read_range
from muse_acp.sim.options.accounts import API_KEY_ENV, stored_credential
from muse_acp.sim.options.faults import exit_now
from muse_acp.sim.state import errors
from muse_acp.sim.state.catalog import catalog_rows
from muse_acp.sim.state.context import HostContext, SessionView
from muse_acp.sim.state.fold import Fold
from muse_acp.sim.state.ids import durable_cursor, micros_of, parse_cursor
from muse_acp.sim.state.session import session_model
from muse_acp_wire.msp import (
    AccountState,
    ApprovalListPendingParams,
    ApprovalListPendingResult,
    EmptyResult,
    ErrorData,
    ItemReadOutputParams,
    ItemReadOutputResult,
    ModelListParams,
    ModelListResult,
    PendingRequest,
    SessionHistory,
    SessionHistoryResult,
    SessionListParams,
    SessionListResult,
    SessionReadParams,
    UsageReadResult,
    ViewPageParams,
    ViewUnsubscribeParams,
)

__all__ = ["Reads", "history", "pending_requests"]

DEFAULT_LIST_LIMIT: Final = 50
LIST_CURSOR_PREFIX: Final = "p:k:"


def history(fold: Fold, *, exclude: bool) -> SessionHistory:
    if exclude:
        return SessionHistory(mode="none", items=None, snapshot=None, none_reason="excluded")
    items = list(fold.items.values())
    return SessionHistory.model_validate({"mode": "inline", "items": items, "snapshot": None})


def pending_requests(fold: Fold) -> list[PendingRequest]:
    pending: list[PendingRequest] = []
    for ask_id, entry in fold.pending.items():
        if entry.kind == "approval":
            pending.append(
                PendingRequest(kind="approval", approval_id=ask_id, view_cursor=entry.cursor)
            )
        else:
            pending.append(
                PendingRequest(kind="userInput", user_input_id=ask_id, view_cursor=entry.cursor)
            )
    return pending


def _list_cursor(micros: int, session_id: str) -> str:
    return f"{LIST_CURSOR_PREFIX}{micros}:{session_id}"


def _after_list_cursor(cursor: str) -> tuple[int, str]:
    body = cursor.removeprefix(LIST_CURSOR_PREFIX)
    micros, _, session_id = body.partition(":")
    if not cursor.startswith(LIST_CURSOR_PREFIX) or not micros.isdigit() or not session_id:
        raise errors.invalid_params("invalid session/list cursor")
    return int(micros), session_id


class Reads:
    """The lease-free request handlers (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [
            RequestRoute("session/read", SessionReadParams, self.read),
            RequestRoute("session/list", SessionListParams, self.list),
            RequestRoute("view/page", ViewPageParams, self.page),
            RequestRoute("item/readOutput", ItemReadOutputParams, self.read_output),
            RequestRoute("model/list", ModelListParams, self.models),
            RequestRoute("approval/listPending", ApprovalListPendingParams, self.list_pending),
            RequestRoute("view/unsubscribe", ViewUnsubscribeParams, self.unsubscribe),
            RequestRoute("usage/read", EmptyResult, self.usage),
            RequestRoute("account/read", EmptyResult, self.account),
        ]

    def _session(self, view: SessionView, *, in_list: bool = False) -> Any:
        return session_model(
            self.ctx.profile,
            view.meta,
            view.fold,
            path=view.path,
            status=view.status,
            with_approval_mode=not in_list,
        )

    async def read(self, params: SessionReadParams, _: RequestContext) -> SessionHistoryResult:
        view = self.ctx.view(params.session_id)
        exclude = True if params.exclude_items is None else params.exclude_items
        head = view.fold.head
        return SessionHistoryResult(
            session=self._session(view),
            view_cursor=durable_cursor(view.meta.session_id, head) if head else "",
            history=history(view.fold, exclude=exclude),
            pending_requests=pending_requests(view.fold),
        )

    async def list(self, params: SessionListParams, _: RequestContext) -> SessionListResult:
        ctx = self.ctx
        metas = {meta.session_id: meta for meta in ctx.store.all_metas()}
        metas.update({sid: live.meta for sid, live in ctx.sessions.items()})
        rows = [
            meta
            for meta in metas.values()
            # Before 1.4.4 no row member says whose subagent a session is: not listed there.
            if (ctx.profile.session_kinds or meta.parent_session_id is None)
            and (params.workspace_root is None or meta.workspace_root == params.workspace_root)
            and (
                params.updated_after is None
                or micros_of(meta.updated_at) > micros_of(params.updated_after)
            )
        ]
        rows.sort(key=lambda meta: (micros_of(meta.updated_at), meta.session_id), reverse=True)
        if params.cursor is not None:
            after = _after_list_cursor(params.cursor)
            rows = [meta for meta in rows if (micros_of(meta.updated_at), meta.session_id) < after]
        limit = params.limit or DEFAULT_LIST_LIMIT
        page, rest = rows[:limit], rows[limit:]
        sessions = []
        for meta in page:
            live = ctx.sessions.get(meta.session_id)
            fold = live.fold if live is not None else Fold(active_turn=meta.active_turn_id)
            status = "notLoaded" if live is None else ("running" if fold.active_turn else "idle")
            path = live.path if live is not None else str(ctx.store.log(meta.session_id).path)
            view = SessionView(meta, fold, path, status, live)
            sessions.append(self._session(view, in_list=True))
        last = page[-1] if page and rest else None
        next_cursor = _list_cursor(micros_of(last.updated_at), last.session_id) if last else None
        return SessionListResult(sessions=sessions, next_cursor=next_cursor)

    async def page(self, params: ViewPageParams, _: RequestContext) -> RawJson:
        sid = params.session_id
        lines = self.ctx.event_lines(sid)
        if params.anchor is not None:
            if params.cursor is not None:
                raise errors.invalid_params("give either cursor or anchor, not both")
            raise errors.host_error(
                f"session {sid} has no compaction to anchor a page at",
                ErrorData(kind="noBoundary", anchor=None, latest_boundary_cursor=None),
            )
        total = len(lines)
        position = None
        if params.cursor is not None:
            position = parse_cursor(sid, params.cursor)
            if position is None or position > total:
                raise errors.host_error(
                    f"cursor {params.cursor} is not a position of session {sid}",
                    ErrorData(
                        kind="notFound",
                        reason="missingAnchor",
                        session_id=sid,
                        anchor=params.cursor,
                    ),
                )
        limit = params.limit
        if params.direction == "backward":
            end = total if position is None else max(position - 1, 0)
            start = max(end - limit, 0)
            next_at = start + 1 if start > 0 else None
        else:
            start = position or 0
            end = min(start + limit, total)
            next_at = end if end < total else None
        next_cursor = b"null" if next_at is None else encode_message(durable_cursor(sid, next_at))
        return RawJson(
            b'{"events":[' + b",".join(lines[start:end]) + b'],"nextCursor":' + next_cursor + b"}"
        )

    async def read_output(
        self, params: ItemReadOutputParams, _: RequestContext
    ) -> ItemReadOutputResult:
        ctx = self.ctx
        if ctx.options.faults.exits_at("readOutput"):
            exit_now("exit:readOutput")
        sid = params.session_id
        if sid not in ctx.sessions and not ctx.store.exists(sid):
            raise errors.session_not_found(sid)
        return read_range(
            ctx.store,
            sid,
            params.item_id,
            params.output_ref,
            params.offset_bytes or 0,
            params.length_bytes or MAX_READ_BYTES,
        )

    async def models(self, params: ModelListParams, _: RequestContext) -> ModelListResult:
        active: str | None = None
        if params.session_id is not None:
            active = self.ctx.meta_of(params.session_id).model_id
        return ModelListResult(
            provider_id="meta",
            profile_id="default",
            source="fakeCatalog",
            models=catalog_rows(self.ctx.profile, active),
        )

    async def list_pending(
        self, params: ApprovalListPendingParams, _: RequestContext
    ) -> ApprovalListPendingResult:
        fold = self.ctx.view(params.session_id).fold
        entries = list(fold.pending.values())
        return ApprovalListPendingResult.model_validate(
            {
                "approvals": [entry.params for entry in entries if entry.kind == "approval"],
                "userInputs": [entry.params for entry in entries if entry.kind == "userInput"],
            }
        )

    async def unsubscribe(self, params: ViewUnsubscribeParams, _: RequestContext) -> EmptyResult:
        self.ctx.meta_of(params.session_id)
        return EmptyResult()

    async def usage(self, _: EmptyResult, __: RequestContext) -> UsageReadResult:
        current = self.ctx.usage.current
        return UsageReadResult() if current is None else UsageReadResult(usage=current)

    async def account(self, _: EmptyResult, __: RequestContext) -> AccountState:
        ctx = self.ctx
        if not ctx.client.experimental:
            raise errors.experimental_required("account/read")
        if ctx.options.env_api_key:
            return AccountState(state="envKey", label=API_KEY_ENV, credential_required=True)
        stored = stored_credential(ctx.options.home)
        if stored is None:
            return AccountState(state="loggedOut", credential_required=True)
        state, label = stored
        if label is None:
            return AccountState(state=state, credential_required=True)
        return AccountState(state=state, label=label, credential_required=True)
