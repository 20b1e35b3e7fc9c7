"""``session/compact``: a manual compaction of a session's history, as real hosts answer it.

Contract: a session with nothing compactable (no item other than a compaction since the last
compaction, or no item at all) is answered ``{status: "noop", reason:
"no_compactable_history"}`` and nothing is recorded. Otherwise the command is acknowledged
``accepted`` and, once that answer is written, one ``compaction`` item (``trigger: "manual"``)
is recorded and sent as ``item/started`` (in progress) then ``item/completed`` (``outcome:
"compacted"``, token counts before and after, ``summarizedThrough``), owned by the running turn
if there is one, else by no turn (``compacting.compaction_items``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from muse_acp.rpc import RequestContext, RequestRoute
from muse_acp.sim.model.compacting import compactable, compaction_items
from muse_acp.sim.state.context import HostContext
from muse_acp.sim.state.session import LiveSession, Position
from muse_acp_wire.msp import (
    CompactionItem,
    ItemEventParams,
    SessionCompactParams,
    SessionCompactResult,
)

__all__ = ["NOTHING_TO_COMPACT", "Compaction", "compactable"]

NOTHING_TO_COMPACT: Final = "no_compactable_history"


class Compaction:
    """The ``session/compact`` route (see the module contract)."""

    def __init__(self, ctx: HostContext) -> None:
        self.ctx = ctx

    def routes(self) -> list[RequestRoute[Any]]:
        return [RequestRoute("session/compact", SessionCompactParams, self.compact)]

    async def compact(
        self, params: SessionCompactParams, request: RequestContext
    ) -> SessionCompactResult:
        session = self.ctx.live(params.session_id)
        count = compactable(list(session.fold.items.values()))
        if count == 0:
            return SessionCompactResult(
                command_id=params.command_id, status="noop", reason=NOTHING_TO_COMPACT
            )
        items = compaction_items(session, "manual", session.fold.active_turn, count)
        for method, item in zip(("item/started", "item/completed"), items, strict=True):
            _, body = session.record(method, _item_event(session, item), item_id=item.item_id)
            self.ctx.send_after(request, method, body)
        return SessionCompactResult(command_id=params.command_id, status="accepted")


def _item_event(
    session: LiveSession, item: CompactionItem
) -> Callable[[Position], ItemEventParams]:
    def build(pos: Position) -> ItemEventParams:
        return ItemEventParams(
            session_id=session.session_id,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            item=item,
        )

    return build
