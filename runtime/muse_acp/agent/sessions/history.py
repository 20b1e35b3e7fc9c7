"""Reading a session back from Muse: its row, and its durable view for ``session/load``.

``read_row`` asks a (lease-free) host for the session's row with ``session/read`` without its
items, within the read budget; ``refusal`` maps the host's errors as ``hosts.ask`` describes.

History is paged forward from the first event with ``view/page`` and translated with the same
translator as live turns, in replay mode: user messages come back as ``user_message_chunk``,
completed messages, thoughts and tool cards in full (paths absolute against the session's
``cwd``; no file is read, so editing tools show no diff), plans and compactions as the client
takes them (the outlet decides, as live); an event the translator turns into no update (token
totals, turn boundaries) is not read at all. Pages are translated and sent one at a time, the next
one read from Muse meanwhile, so memory stays bounded by two pages however long the session is;
the number of pages read is bounded too, and hitting that bound is logged rather than silently
ignored (and told as a notice to a client that shows notices).
"""

from __future__ import annotations

import logging
from typing import Final, Protocol

import anyio

from muse_acp.agent.cards.child_sessions import stoppable_kinds
from muse_acp.agent.cards.output_cards import OutputPolicy
from muse_acp.agent.cards.tool_cards import output_reference_update
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.hosting.hosts import Refusal, ask
from muse_acp.agent.translation.translate import TRANSLATED, TurnTranslator, Update
from muse_acp.agent.translation.view_events import read_event
from muse_acp.host.client import MspHost
from muse_acp.tasks import task_group
from muse_acp_wire import msp

__all__ = [
    "MAX_PAGES",
    "MAX_REANNOUNCED",
    "PAGE_SIZE",
    "ReplayOutlet",
    "ReplayTarget",
    "read_row",
    "replay_history",
]

logger: Final = logging.getLogger("muse_acp.agent")

PAGE_SIZE: Final = 1000
MAX_PAGES: Final = 500
"""At most 500,000 durable events are replayed; longer histories are cut and logged."""
MAX_REANNOUNCED: Final = 256
"""Stored-output references re-announced after a replay (the latest items win)."""


class ReplayOutlet(Protocol):
    """Where replayed updates go (``outlet.UpdateOutlet`` is one; a child session's load
    takes only its own, ``child_sessions``)."""

    async def send(self, update: Update) -> None: ...

    async def tell(self, notice: Notice) -> None: ...


class ReplayTarget(Protocol):
    """Where history goes (``session.AcpSession`` is one)."""

    @property
    def session_id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def outlet(self) -> ReplayOutlet: ...


async def read_row(host: MspHost, session_id: str, budget: float, refusal: Refusal) -> msp.Session:
    """The session's row (see the module contract).

    Raises:
        RpcError: the mapped host failure, or what ``refusal`` made of the host's error.
    """
    result = await ask(
        host,
        "session/read",
        msp.SessionReadParams(session_id=session_id, exclude_items=True),
        msp.SessionHistoryResult,
        phase="reading",
        budget=budget,
        refusal=refusal,
    )
    return result.session


class _Page:
    """One ``view/page`` being read while the page before it is translated."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: msp.ViewPageResult | None = None


async def replay_history(
    session: ReplayTarget, host: MspHost, output: OutputPolicy, budget: float
) -> None:
    """Send the session's history to the client as ``session/update`` notifications; each page
    is read within ``budget`` seconds (``reading`` phase failures)."""
    translator = TurnTranslator(
        session_id=session.session_id,
        replay=True,
        output=output,
        cwd=session.cwd,
        stoppable_children=stoppable_kinds(host.features),
    )
    latest_outputs: dict[str, msp.ToolCallItem | msp.UserShellItem] = {}

    async def read(cursor: str | None, into: _Page) -> None:
        params = msp.ViewPageParams(
            session_id=session.session_id, limit=PAGE_SIZE, cursor=cursor, direction="forward"
        )
        into.result = await ask(
            host, "view/page", params, msp.ViewPageResult, phase="reading", budget=budget
        )
        into.done.set()

    def read_soon(cursor: str | None) -> _Page:
        page = _Page()
        reading.start_soon(read, cursor, page)
        return page

    cut = True
    cursor: str | None = None
    # The next page is asked for as soon as its cursor is known, so Muse reads it while this
    # page is translated and sent: at most two pages are held at once.
    async with task_group() as reading:
        ahead = read_soon(None)
        for pages in range(1, MAX_PAGES + 1):
            await ahead.done.wait()
            page = ahead.result
            assert page is not None  # set before done
            more = page.next_cursor is not None and page.next_cursor != cursor
            if more and pages < MAX_PAGES:
                ahead = read_soon(page.next_cursor)
            for event in page.events:
                if event.method not in TRANSLATED:
                    continue  # it would give no update: not even read
                params = read_event(event)
                if params is None:
                    continue
                item = params.item if isinstance(params, msp.ItemEventParams) else None
                if isinstance(item, msp.ToolCallItem | msp.UserShellItem) and item.output_ref:
                    # Re-inserting moves the item to the end, so the dict keeps the latest ones.
                    latest_outputs.pop(item.item_id, None)
                    latest_outputs[item.item_id] = item
                    while len(latest_outputs) > MAX_REANNOUNCED:
                        latest_outputs.pop(next(iter(latest_outputs)))
                for update in translator.updates(event.method, params):
                    await session.outlet.send(update)
            if not more:
                cut = False
                break
            cursor = page.next_cursor
    if cut:
        logger.warning(
            "history of %s exceeds %d pages; replay was cut", session.session_id, MAX_PAGES
        )
        shown = MAX_PAGES * PAGE_SIZE
        text = (
            f"This session's history is longer than the {shown} events muse-acp replays; "
            "the rest of it is not shown here, but Muse still has it."
        )
        # Before notices this was only logged: a plain client still hears nothing of it.
        await session.outlet.tell(Notice("warning", "History replay was cut", text, chat=False))
    if output.references:
        for item in latest_outputs.values():
            reference = output_reference_update(session.session_id, item, output)
            if reference is not None:
                await session.outlet.send(reference)
