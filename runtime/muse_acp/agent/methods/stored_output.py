"""Stored tool output: ``_muse/readOutput`` serves the full bytes Muse 1.2.1 kept for a tool.

Contract: a read is served only when ``initialize`` negotiated ``muse/output`` and the session is
open here. It first proves the reference on the host the session lends it
(``AcpSession.reading``): ``session/read`` must report the session in its workspace and the
item's latest revision, searched in at most ``MAX_HISTORY_PAGES`` view pages (or remembered by
``output_reference.ProofCache`` at an unchanged cursor), must carry that reference. Then one
``item/readOutput`` goes to the same host, never retried; no lease, setting or turn is touched.
The page goes back as Muse encoded it once ``check_page`` found it consistent (``rpc.splice``).

Errors: INVALID_PARAMS for what the caller got wrong (a mismatched reference, an offset past the
bytes or inside a UTF-8 character); INVALID_REQUEST for what is unavailable (not negotiated, no
stored output, bytes not ``available``); INTERNAL_ERROR for inconsistent pages and host failures.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import asdict
from functools import partial
from typing import TypeVar

from muse_acp.agent.cards.output_reference import (
    HISTORY_PAGE_SIZE,
    OutputRead,
    check_page,
    find_latest_item,
    host_read_error,
    inconsistent,
    never_ran,
    page_response,
    stored_reference,
    unsupported_host,
)
from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.workspace import same_directory
from muse_acp.agent.hosting.hosts import Refusal, asking
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.host.bindings import error_kind
from muse_acp.host.client import MspHost
from muse_acp.rpc import INVALID_REQUEST, RawJson, RequestContext, RpcError
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["handle_read_output"]

R = TypeVar("R", bound=WireModel)


def _reading(
    session: AcpSession, host: MspHost, method: str, refusal: Refusal | None = None
) -> AbstractAsyncContextManager[None]:
    """``asking`` for one host call of a read: the reading phase, within the read budget."""
    budget = session.hosting.config.deadlines.read
    return asking(host, method, phase="reading", budget=budget, refusal=refusal)


async def _ask(
    session: AcpSession,
    host: MspHost,
    method: str,
    params: WireModel,
    result_type: type[R],
    refusal: Refusal | None = None,
) -> R:
    async with _reading(session, host, method, refusal):
        result = await host.call(method, params, result_type)
    return result


def _not_on_host(error: RpcError) -> RpcError | None:
    return never_ran() if error_kind(error) == "sessionNotFound" else None


async def _check_session(session: AcpSession, host: MspHost) -> str:
    """Check the session is Muse's and in its workspace; return its current view cursor."""
    params = msp.SessionReadParams(session_id=session.session_id, exclude_items=True)
    result = await _ask(
        session, host, "session/read", params, msp.SessionHistoryResult, _not_on_host
    )
    if result.session.session_id != session.session_id:
        raise inconsistent("session", "session/read answered for another session")
    if not same_directory(result.session.workspace_root, session.cwd):
        raise RpcError(
            INVALID_REQUEST,
            f"Muse records session {session.session_id} under another workspace than "
            f"{session.cwd}; open the session from its own workspace to read its output",
        )
    return result.view_cursor


async def _history_page(
    session: AcpSession, host: MspHost, cursor: str | None
) -> msp.ViewPageResult:
    params = msp.ViewPageParams(
        session_id=session.session_id,
        limit=HISTORY_PAGE_SIZE,
        cursor=cursor,
        direction="backward",
    )
    return await _ask(session, host, "view/page", params, msp.ViewPageResult)


async def handle_read_output(
    ctx: AgentContext, params: acp.MuseReadOutputRequest, _: RequestContext
) -> acp.MuseReadOutputResponse | RawJson:
    if not ctx.negotiated.output:
        raise RpcError(
            INVALID_REQUEST,
            "stored output reads were not negotiated on this connection: opt in with "
            'clientCapabilities._meta["muse/output"] = 1 at initialize, with a Muse 1.2.1 host',
        )
    session = ctx.sessions.require(params.session_id)
    read = OutputRead.of(params)
    async with session.reading(ctx.config.deadlines.read) as host:
        if not host.features.has("storedOutput"):
            raise unsupported_host()
        view_cursor = await _check_session(session, host)
        item = session.proofs.proven(host, read.item_id, view_cursor)
        if item is None:
            item = await find_latest_item(
                partial(_history_page, session, host), read.session_id, read.item_id
            )
            if item is not None:
                session.proofs.prove(host, read.item_id, view_cursor, item)
        stored_reference(item, read)
        request = msp.ItemReadOutputParams(**asdict(read))
        refusal = partial(host_read_error, read=read)
        async with _reading(session, host, "item/readOutput", refusal):
            page, content = await host.call_forwarding(
                "item/readOutput", request, msp.ItemReadOutputResult, "content"
            )
    check_page(page, read)
    # A close while the read ran wins: the client must load the session again.
    ctx.sessions.require(read.session_id)
    # The page's members pass as they are; check_page vouched for each of them.
    return page_response(read, page, content)
