"""``session/list``: Muse's root sessions, a page at a time, with the titles users chose.

Pages come from the agent's kept catalog host (no host starts per page), ``LIST_PAGE_SIZE``
sessions each, optionally only those of one workspace. The cursor handed to the client wraps the
host's own cursor together with the workspace it was issued for, so a cursor from another
listing (or a forged one) is refused with a clear error instead of listing something else.
Left out, so a page may hold fewer: sessions deleted through muse-acp that Muse still has
(``tombstones``) and subagents' own sessions (rows of ``kind`` ``subagent``, listed by Muse from
1.4.4; each is reached by its parent's card, ``child_sessions``); a row of a kind muse-acp does
not know is listed, as Muse asks. A title is the user's own when one is stored, else Muse's.
Stored preferences are read off the event loop, one bounded read per page; a session whose own
file is unusable is still listed, with the problem in its ``_meta["muse/notice"]``. A session's
additional directories are those stored for it (``workspace_roots``). The legacy exec backend
does not advertise listing and refuses it (``capabilities.not_on_exec``).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from typing import Final

from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.workspace import check_workspace
from muse_acp.agent.handshake.capabilities import not_on_exec
from muse_acp.agent.hosting.hosts import ask
from muse_acp.agent.options.preferences import SessionPreferences
from muse_acp.agent.options.titles import display_title
from muse_acp.agent.sessions.workspace_roots import recall_many
from muse_acp.rpc import INVALID_PARAMS, RequestContext, RpcError
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = ["LIST_PAGE_SIZE", "handle_list", "listed"]

LIST_PAGE_SIZE: Final = 50
NOTICE_LIMIT: Final = 2048


def _encode_cursor(cwd: str | None, host_cursor: str) -> str:
    raw = json.dumps({"v": 1, "cwd": cwd, "next": host_cursor}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, cwd: str | None) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        valid = isinstance(data, dict) and data.get("v") == 1 and isinstance(data.get("next"), str)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        valid = False
    if not valid or data.get("cwd") != cwd:
        raise RpcError(
            INVALID_PARAMS,
            "the session cursor is not one this agent issued for this listing; list again "
            "without a cursor",
        )
    host_cursor: str = data["next"]
    return host_cursor


def listed(row: msp.Session) -> bool:
    """Whether a host's row is a session of its own for the client: neither workspace-less nor
    a subagent's (see the module contract)."""
    return bool(row.workspace_root) and row.kind != "subagent"


def _entry(row: msp.Session, kept: SessionPreferences, roots: tuple[str, ...]) -> acp.SessionInfo:
    """One listed session; an unusable preference file of its own is told in its ``_meta``."""
    entry = acp.SessionInfo(
        session_id=row.session_id,
        cwd=row.workspace_root,
        title=display_title(kept.user_title, row),
        updated_at=row.updated_at,
    )
    if roots:
        entry.additional_directories = list(roots)
    if kept.problem is not None:
        notice = acp.MuseSessionListItemMeta(muse_notice=clip(kept.problem, NOTICE_LIMIT))
        entry.field_meta = notice.model_dump(mode="json", by_alias=True, exclude_none=True)
    return entry


async def handle_list(
    ctx: AgentContext, params: acp.ListSessionsRequest, _: RequestContext
) -> acp.ListSessionsResponse:
    if await ctx.on_exec():
        raise not_on_exec("session/list")
    cwd = params.cwd
    if cwd is not None:
        check_workspace(cwd, None)
    host_cursor = _decode_cursor(params.cursor, cwd) if params.cursor else None
    async with ctx.catalog_host(cwd or os.getcwd()) as host:
        page = await ask(
            host,
            "session/list",
            msp.SessionListParams(limit=LIST_PAGE_SIZE, cursor=host_cursor, workspace_root=cwd),
            msp.SessionListResult,
            phase="reading",
            budget=ctx.config.deadlines.read,
        )
    rows = [row for row in page.sessions if listed(row)]
    hidden = await ctx.tombstones.hidden([row.session_id for row in rows])
    rows = [row for row in rows if row.session_id not in hidden]
    ids = [row.session_id for row in rows]
    kept = await ctx.preferences.read_many(ids)
    roots = await recall_many(ctx.preferences, ids)
    sessions = [_entry(row, kept[row.session_id], roots[row.session_id]) for row in rows]
    response = acp.ListSessionsResponse(sessions=sessions)
    if page.next_cursor:
        response.next_cursor = _encode_cursor(cwd, page.next_cursor)
    return response
