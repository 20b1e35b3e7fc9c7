"""What the host tells a client besides the items of a turn: status, usage, names, view health
and gaps in the live view.

Contract: each function emits its notification only where the simulated version's schema
publishes it: ``status_changed`` (around turns), ``usage_changed`` (after every
``turn/completed``), ``name_session`` (``sim:name``), ``view_lost`` (``sim:viewlost``),
``report_setting`` (``sim:flags``, ``sim:roots``), ``miss_events`` (``sim:gap``: events
recorded but not sent, then ``view/gap``, so ``view/page`` returns exactly what was missed),
``switch_model`` / ``switch_approval`` (another client's change, kept and emitted as durable
events) and ``stray_request`` (the fault of that name: the
turn then waits, silent, until stopped). docs/muse-sim.md says what each directive plays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from muse_acp.sim.script.session_directives import Flags, Name, Roots
from muse_acp.sim.state.ids import new_uuid7
from muse_acp_wire.msp import (
    SessionApprovalModeChangedParams,
    SessionModelChangedParams,
    SessionNameChangedParams,
    SessionStatusChangedParams,
    SessionViewHealthChangedParams,
    ViewGapParams,
)

if TYPE_CHECKING:
    from muse_acp.sim.model.turn import Turn
    from muse_acp.sim.state.context import HostContext
    from muse_acp.sim.state.session import LiveSession

__all__ = [
    "miss_events",
    "name_session",
    "report_setting",
    "status_changed",
    "stray_request",
    "switch_approval",
    "switch_model",
    "usage_changed",
    "view_lost",
]


async def status_changed(ctx: HostContext, session: LiveSession, status: str, cursor: str) -> None:
    await ctx.notify(
        "session/statusChanged",
        SessionStatusChangedParams(
            session_id=session.session_id, status=status, view_cursor=cursor
        ),
    )


async def usage_changed(ctx: HostContext) -> None:
    usage = ctx.usage.observe_turn()
    await ctx.notify("usage/changed", usage)


async def name_session(turn: Turn, directive: Name) -> None:
    ctx = turn.ctx
    session = turn.session
    if not ctx.profile.session_names:
        return  # this version's sessions have no names
    name = directive.slug
    session.update(name=name, title=directive.text if ctx.profile.titles else None)
    if ctx.profile.publishes("session/nameChanged"):
        await session.emit(
            "session/nameChanged",
            lambda pos: SessionNameChangedParams(
                session_id=session.session_id,
                view_cursor=pos.cursor,
                source_range=pos.source_range,
                name=name,
            ),
        )
    await ctx.list_changed(session.meta)


async def report_setting(turn: Turn, directive: Flags | Roots) -> None:
    """The model says the host's safety flags and approval mode (``sim:flags``) or the
    session's workspace roots (``sim:roots``)."""
    session = turn.session
    if isinstance(directive, Flags):
        flags = " ".join(turn.ctx.options.safety_flags())
        await turn.say(f"[host flags: {flags}; approval mode: {session.meta.approval_mode}]")
        return
    roots = session.roots or (session.meta.workspace_root or "",)
    await turn.say(f"[workspace roots: {', '.join(roots)}]")


async def view_lost(turn: Turn) -> None:
    await turn.ctx.notify(
        "session/viewHealthChanged",
        SessionViewHealthChangedParams(
            session_id=turn.session_id, health="unavailable", none_reason="projectionUnavailable"
        ),
    )


async def miss_events(turn: Turn, count: int) -> None:
    session = turn.session
    after = session.head_cursor
    for number in range(1, count + 1):
        turn.record_item(
            "item/completed", turn.finished_message(f"missed event {number} of {count}")
        )
    await session.outbox.pace()
    params, body = turn.record_item(
        "item/completed", turn.finished_message(f"resumed after {count} missed events")
    )
    await session.outbox.send_event("item/completed", body)
    await turn.ctx.notify(
        "view/gap",
        ViewGapParams(session_id=session.session_id, after=after, next=params.view_cursor),
    )


async def stray_request(turn: Turn, method: str) -> None:
    turn.phase = f"waiting on the client's answer to {method}"
    params = {"sessionId": turn.session_id, "turnId": turn.turn_id}
    # The answer is never of use (see the contract): the turn waits until it is stopped.
    await turn.ctx.ask_client(method, params, anyio.Event())


OTHER_CLIENT = "muse_tui"
"""The client that switches settings in ``switch_model`` and ``switch_approval``."""


async def switch_model(turn: Turn, model_id: str) -> None:
    session = turn.session
    session.update(model_id=model_id, provider_id="meta")
    await session.emit(
        "session/modelChanged",
        lambda pos: SessionModelChangedParams(
            session_id=session.session_id,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            model_id=model_id,
            provider_id="meta",
            source="user",
        ),
    )


async def switch_approval(turn: Turn, mode: str) -> None:
    session = turn.session
    command_id = new_uuid7()
    session.update(
        approval_mode=mode, approval_source="approvalReconfigure", approval_command_id=command_id
    )
    await session.emit(
        "session/approvalModeChanged",
        lambda pos: SessionApprovalModeChangedParams.model_validate(
            {
                "sessionId": session.session_id,
                "viewCursor": pos.cursor,
                "sourceRange": pos.source_range,
                "mode": mode,
                "source": "approvalReconfigure",
                "commandId": command_id,
                "clientName": OTHER_CLIENT,
            }
        ),
    )
