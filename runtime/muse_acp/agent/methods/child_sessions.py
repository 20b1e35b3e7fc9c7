"""Child sessions (``child_sessions`` ids): ``session/load`` and ``session/cancel`` on one.

Contract: either method names an ordinary session (``others``: ``lifecycle``, ``prompting``)
or a child, told apart by its id alone; ``session/list`` lists no child (children are reached
from their parent: its cards' ``_meta["muse/children"]``, its ``subagent_update``s).

* Loading a child needs no record: the parent must be a session Muse has in this workspace; its
  history is paged as for a load and only the child's transcript is sent, with the child's id
  (-32002 when the parent shows no such child), with a subagent's tool calls and words read
  from its own Muse session (``child_tool_calls``). The parent owns the child: no session opens.
* ``session/cancel`` on a running child stops it alone, in the background (a notification
  waits on nothing), on the parent's host: a workflow child is skipped (``workflow/childControl``
  with its current attempt, feature ``workflowChildren``), a subagent stopped (``subagent/stop``,
  feature ``subagentStop``); the parent's turn goes on. Where that cannot be done (parent not
  open here, child ended, Muse too old) nothing is sent and the parent's user is told why.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from types import MappingProxyType
from typing import Final

from muse_acp.agent.cards.child_sessions import STOPPED_BY, ChildRef, parse_child_id
from muse_acp.agent.cards.output_cards import BASELINE_OUTPUT
from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.errors.workspace import QUOTED_PATH_LIMIT, check_workspace, same_directory
from muse_acp.agent.handshake.capabilities import not_on_exec
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.sessions.history import read_row, replay_history
from muse_acp.agent.sessions.session import AcpSession, ClientLink, shown_id
from muse_acp.agent.translation.child_tool_calls import ChildToolCalls
from muse_acp.agent.translation.child_transcripts import ChildUpdate
from muse_acp.agent.translation.translate import Update
from muse_acp.agent.translation.view_events import PageReader
from muse_acp.host.bindings import error_kind
from muse_acp.host.client import MspHost
from muse_acp.host.features import first_declaring
from muse_acp.ids import new_uuid7
from muse_acp.redact import redact
from muse_acp.rpc import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND,
    ConnectionClosed,
    RequestContext,
    RpcError,
)
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = ["handle_cancel", "handle_load"]

logger: Final = logging.getLogger("muse_acp.agent")

LoadHandler = Callable[
    [AgentContext, acp.LoadSessionRequest, RequestContext], Awaitable[acp.LoadSessionResponse]
]
CancelHandler = Callable[[AgentContext, acp.CancelNotification], Awaitable[None]]


class _ChildReplay:
    """A parent's history as a replay target that lets through only one child's transcript;
    a subagent's own tool calls and words are read from its Muse session once it shows one."""

    def __init__(self, ref: ChildRef, cwd: str, client: ClientLink, read_page: PageReader) -> None:
        self.ref = ref
        self.session_id = ref.parent_id
        self.cwd = cwd
        self._client = client
        self._child = ref.session_id
        self._tools = ChildToolCalls(ref.parent_id, cwd=cwd)
        self._read_page = read_page
        self._read_from: str | None = None
        self.found = False

    @property
    def outlet(self) -> _ChildReplay:
        return self

    async def send(self, update: Update) -> None:
        if not isinstance(update, ChildUpdate) or update.session_id != self._child:
            return
        self.found = True
        muse_session = update.muse_session_id
        if muse_session is not None and muse_session != self._read_from:
            # Told once, before the first status that names its session: after it started,
            # before the end of its work (which that status may already be).
            self._read_from = muse_session
            child = self._tools.note(self.ref.key, muse_session)
            for call in await self._tools.catch_up(child, self._read_page):
                await self._notify(call)
        if not self._tools.repeats(update):
            await self._notify(update)

    async def _notify(self, update: ChildUpdate) -> None:
        params = acp.SessionNotification(session_id=self._child, update=update.update)
        await self._client.notify("session/update", params)

    async def tell(self, notice: Notice) -> None:
        logger.info("loading child session %s: %s", self._child, notice.text)


async def handle_load(
    ctx: AgentContext,
    params: acp.LoadSessionRequest,
    rctx: RequestContext,
    *,
    others: LoadHandler,
) -> acp.LoadSessionResponse:
    ref = parse_child_id(params.session_id)
    if ref is None:
        return await others(ctx, params, rctx)
    if await ctx.on_exec():
        raise not_on_exec("session/load")
    cwd = check_workspace(params.cwd, params.additional_directories)
    budget = ctx.config.deadlines.read
    async with ctx.catalog_host(cwd) as host:
        pages = partial(
            ask, host, "view/page", result_type=msp.ViewPageResult, phase="reading", budget=budget
        )
        target = _ChildReplay(ref, cwd, ctx.acp, pages)
        await _check_parent(ctx, host, ref.parent_id, cwd)
        await replay_history(target, host, BASELINE_OUTPUT, budget)
    if not target.found:
        raise RpcError(
            RESOURCE_NOT_FOUND,
            f"session {shown_id(ref.parent_id)} shows no {ref.kind} {ref.key[:100]!r}; load "
            "the parent session and pick a child from its cards",
            {"sessionId": params.session_id[:200]},
        )
    return acp.LoadSessionResponse()


async def _check_parent(ctx: AgentContext, host: MspHost, parent_id: str, cwd: str) -> None:
    """Refuse unless Muse has the parent session, in the workspace ``cwd``."""
    await ctx.tombstones.refuse(parent_id)  # deleted here, though Muse may still have it
    row = await read_row(host, parent_id, ctx.config.deadlines.read, partial(_no_parent, parent_id))
    if not same_directory(row.workspace_root, cwd):
        raise RpcError(
            INVALID_PARAMS,
            f"session {shown_id(parent_id)} belongs to another workspace "
            f"({redact(clip(row.workspace_root or '', QUOTED_PATH_LIMIT))}); open its children "
            "from that directory",
        )


def _no_parent(parent_id: str, error: RpcError) -> RpcError | None:
    if error_kind(error) != "sessionNotFound":
        return None
    return RpcError(
        RESOURCE_NOT_FOUND,
        f"Muse has no session {shown_id(parent_id)}, the parent of this child session",
        {"sessionId": shown_id(parent_id)},
    )


async def handle_cancel(
    ctx: AgentContext, params: acp.CancelNotification, *, others: CancelHandler
) -> None:
    ref = parse_child_id(params.session_id)
    if ref is None:
        await others(ctx, params)
        return
    parent = ctx.sessions.get(ref.parent_id)
    if parent is None or parent.closed:
        logger.info("session/cancel for child %s of a session not open here", ref.session_id)
        return
    # Notifications are handled in arrival order and must not wait on Muse: stopped meanwhile.
    ctx.hosting.tasks.start_soon(_stop_or_say_why, ctx, parent, ref)


async def _stop_or_say_why(ctx: AgentContext, parent: AcpSession, ref: ChildRef) -> None:
    why = await _stop_child(ctx, parent, ref)
    if why is None:
        return
    text = f"muse-acp did not stop {ref.kind} {ref.key[:100]!r}: {why}."
    try:
        await parent.tell(Notice("warning", "A child session was not stopped", text))
    except ConnectionClosed:
        logger.info("%s", text)  # the client has gone: nobody is left to tell


_CANNOT: Final[Mapping[str, tuple[str, str]]] = MappingProxyType(
    {
        "workflow": ("one child of a workflow", "stop the whole workflow"),
        "subagent": ("one subagent on its own", "stop the prompt"),
    }
)
"""Where Muse cannot stop one child of a kind: what it cannot stop, and what to stop instead."""
_REASON: Final = "cancelled from the ACP client"
"""The ``reason`` ``subagent/stop`` carries."""


async def _stop_child(ctx: AgentContext, parent: AcpSession, ref: ChildRef) -> str | None:
    """Stop the child ``ref`` names on the parent's host; why not, when it cannot."""
    host = parent.execution.host
    feature = STOPPED_BY[ref.kind]
    if host is not None and not host.features.has(feature):
        oldest = first_declaring(feature)
        what, instead = _CANNOT[ref.kind]
        return (
            f"this Muse ({host.version}) cannot stop {what}; Muse {oldest} and newer can, "
            f"or {instead}"
        )
    command_id, session_id = new_uuid7(), parent.session_id
    params: msp.WorkflowChildControlParams | msp.SubagentOwnerReasonParams
    if ref.run_id is not None:
        attempt = parent.running.child_attempt(ref.run_id, ref.key)
        running = attempt is not None
        params = msp.WorkflowChildControlParams(
            command_id=command_id,
            session_id=session_id,
            workflow_run_id=ref.run_id,
            child_id=ref.key,
            attempt=attempt or 1,
            action="skip",
        )
    else:
        running = parent.running.subagent_running(ref.key)
        params = msp.SubagentOwnerReasonParams(
            command_id=command_id, session_id=session_id, subagent_id=ref.key, reason=_REASON
        )
    if not running or host is None or host.dead.is_set():
        return "it is not running any more"
    budget = ctx.config.deadlines.submit
    try:
        async with parent.execution.holding(host):
            if isinstance(params, msp.WorkflowChildControlParams):
                ack = await ask(
                    host,
                    "workflow/childControl",
                    params,
                    msp.CommandAck,
                    phase="cancelling",
                    budget=budget,
                )
                status = ack.status
            else:
                accepted = await ask(
                    host,
                    "subagent/stop",
                    params,
                    msp.CommandAcceptedResult,
                    phase="cancelling",
                    budget=budget,
                )
                status = accepted.status
    except RpcError as error:
        return f"Muse refused ({error.message})"
    return "it had ended by the time Muse was asked" if status == "noop" else None
