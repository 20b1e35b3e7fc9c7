"""``/compact``: Muse's own compaction of the session's history, through ``session/compact``.

Contract: ``run_compact`` sends ``session/compact`` to the session's execution host (started,
and the session attached, when none runs) and never starts a turn. A client with
``session.compaction`` is shown it as compaction updates (``translation.compactions``), named
by Muse's item (else by the command: nothing to compact, refused, or not started within the
wait); any other client gets one agent message saying how it went (``UpdateOutlet`` decides):
compacted (the item completed within the submit budget, with the token counts before and after
when Muse gave them), accepted (not finished within that wait: it goes on in the background),
noop (nothing to compact, with Muse's reason) or failed (refused, or the item ended other than
completed, with Muse's reason, redacted and bounded). A host that cannot be started is an error
of the prompt, as for a turn.
"""

from __future__ import annotations

from typing import Final

import anyio

from muse_acp.agent.commands.session_commands import send_command, session_host
from muse_acp.agent.context import AgentContext
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.translation.compactions import (
    NOOP_REASONS,
    compaction_failed,
    compaction_started,
    compaction_updates,
    nothing_to_compact,
)
from muse_acp.agent.turns.work import SessionWork
from muse_acp.ids import new_uuid7
from muse_acp.redact import redact
from muse_acp.rpc import RpcError
from muse_acp.text import clip
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = ["REASON_LIMIT", "compaction_text", "run_compact"]

REASON_LIMIT: Final = 300


async def run_compact(
    ctx: AgentContext, session: AcpSession, work: SessionWork, _: str | None
) -> acp.StopReason:
    """Run ``/compact`` (see the module contract)."""
    host = await session_host(ctx, session, work)
    if host is None:
        return "cancelled"
    finished = anyio.Event()
    items: list[msp.CompactionItem] = []
    seen = False

    async def on_event(method: str, params: WireModel) -> None:
        item = params.item if isinstance(params, msp.ItemEventParams) else None
        nonlocal seen
        if not isinstance(item, msp.CompactionItem):
            return
        seen = True
        if item.status != "inProgress":
            items.append(item)  # shown with the reply
            finished.set()
        else:
            await session.outlet.show_compaction(compaction_updates(item, why), None)

    def why(text: str) -> str:
        return _reason(ctx, text)

    params = msp.SessionCompactParams(command_id=new_uuid7(), session_id=session.session_id)
    async with work.commit():  # Muse compacts once asked
        try:
            result = await send_command(
                session,
                host,
                "session/compact",
                params,
                msp.SessionCompactResult,
                on_event=on_event,
                until=finished,
                wait=ctx.config.deadlines.submit,
                awaits=lambda ack: ack.status == "accepted",
            )
        except RpcError as error:
            reason = _reason(ctx, error.message)
            failed = compaction_failed(params.command_id, reason)
            await session.outlet.show_compaction(failed, f"Compaction failed: {reason}")
            return "end_turn"
    if result.status == "noop":
        reason = result.reason or "it gave no reason"
        said = f"Muse says {NOOP_REASONS.get(reason, _reason(ctx, reason))}"
        noop = nothing_to_compact(params.command_id, said)
        await session.outlet.show_compaction(noop, f"Nothing was compacted: {said}.")
        return "end_turn"
    item = items[0] if items else None
    updates = compaction_updates(item, why) if item is not None else []
    if not seen:  # Muse made no item yet: the command names the compaction meanwhile
        updates = compaction_started(params.command_id)
    await session.outlet.show_compaction(updates, compaction_text(item))
    return "end_turn"


def compaction_text(item: msp.CompactionItem | None) -> str:
    """The reply for an accepted compaction whose item ended as ``item`` (None: not yet)."""
    if item is None:
        return (
            "Compaction accepted: Muse is compacting this session's history in the background; "
            "send /status later to see the context use."
        )
    if item.status != "completed" or (item.outcome not in (None, "compacted")):
        why = clip(" ".join(str(item.reason or item.outcome or item.status).split()), REASON_LIMIT)
        return f"Compaction failed: Muse ended it as {why}."
    text = "Compacted: Muse summarised this session's earlier history."
    if item.tokens_before is not None and item.tokens_after is not None:
        text += f" Context went from {item.tokens_before:,} to {item.tokens_after:,} tokens."
    return text


def _reason(ctx: AgentContext, text: str) -> str:
    return redact(" ".join(text.split()), environ=ctx.environ, limit=REASON_LIMIT)
