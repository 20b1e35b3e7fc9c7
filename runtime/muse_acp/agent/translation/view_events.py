"""Durable view events read back from Muse: one paged event as a model, and the events a
``view/gap`` says were never delivered live.

Contract: ``read_event`` parses one ``view/page`` event with the model ``msp.CLIENT_NOTIFICATIONS``
names for its method, or returns None (logged) for a method without params or an event that does
not parse, so one bad event never hides the rest. ``missed_events`` pages forward from the gap's
``after`` cursor and yields, in order, every event up to but not including the one at ``next``
(which was delivered live), so nothing is lost and nothing is handled twice; it stops at the end
of the view and after ``MAX_GAP_PAGES`` pages of ``GAP_PAGE_SIZE`` events (logged).

A ``GapFiller`` keeps a turn's order across a gap: live events are held (up to ``limit``;
beyond it handled at once, out of order but never lost) until the missed events were handled,
then follow in arrival order; a further gap among them, or work ``defer``red among them (a
subagent's session read, ``drain``), is done the same way. A page that cannot be read fails
the turn (``on_failure``); a gap cut at its bound is also told as a notice (``notices``).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import suppress
from typing import Final

from pydantic import ValidationError

from muse_acp.agent.errors.notices import Notice, NoticeOutlet
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

__all__ = [
    "GAP_PAGE_SIZE",
    "MAX_GAP_PAGES",
    "EventHandler",
    "GapFiller",
    "PageReader",
    "missed_events",
    "read_event",
]

logger: Final = logging.getLogger("muse_acp.agent")

GAP_PAGE_SIZE: Final = 200
MAX_GAP_PAGES: Final = 50
"""A gap of more than 10,000 events is filled in part, and the rest logged as lost."""

PageReader = Callable[[msp.ViewPageParams], Awaitable[msp.ViewPageResult]]
"""Reads one ``view/page`` (the caller's budget and failure mapping apply)."""
EventHandler = Callable[[str, WireModel], Awaitable[None]]
Deferred = Callable[[], Awaitable[None]]


def read_event(event: msp.ViewEvent) -> WireModel | None:
    """The event's params as the model of its method, or None when there is none to read."""
    spec = msp.CLIENT_NOTIFICATIONS.get(event.method)
    if spec is None or spec.params is None:
        return None
    try:
        # The model's own validator, as ``model_validate`` calls it, minus that wrapper's cost:
        # about a microsecond an event, an eighth of validating a page of history.
        validated: WireModel = spec.params.__pydantic_validator__.validate_python(
            event.params, by_alias=True, by_name=False
        )
        return validated
    except ValidationError:
        logger.warning("skipped an unreadable %s event from the session's view", event.method)
        return None


async def missed_events(
    read_page: PageReader, gap: msp.ViewGapParams, cut: list[int] | None = None
) -> AsyncIterator[tuple[str, WireModel]]:
    """Yield the events between ``gap.after`` and ``gap.next`` (see the module contract); when
    the gap is cut at its bound, the number of events read is appended to ``cut``.

    Raises:
        RpcError: a page could not be read (as ``read_page`` reports it).
    """
    cursor = gap.after
    for _ in range(MAX_GAP_PAGES):
        page = await read_page(
            msp.ViewPageParams(
                session_id=gap.session_id, limit=GAP_PAGE_SIZE, cursor=cursor, direction="forward"
            )
        )
        for event in page.events:
            if event.params.get("viewCursor") == gap.next:
                return
            params = read_event(event)
            if params is not None:
                yield event.method, params
        if page.next_cursor is None or page.next_cursor == cursor:
            return
        cursor = page.next_cursor
    logger.warning(
        "the gap in the view of %s after %s is longer than %d events; the rest was not read",
        gap.session_id,
        gap.after,
        MAX_GAP_PAGES * GAP_PAGE_SIZE,
    )
    if cut is not None:
        cut.append(MAX_GAP_PAGES * GAP_PAGE_SIZE)


class GapFiller:
    """Holds a turn's live events behind a gap until the missed ones are handled."""

    def __init__(
        self,
        read_page: PageReader,
        handle: EventHandler,
        limit: int,
        on_failure: Callable[[RpcError], None],
        notices: NoticeOutlet | None = None,
    ) -> None:
        self._read_page = read_page
        self._handle = handle
        self._limit = limit
        self._on_failure = on_failure
        self._notices = notices
        self._backlog: deque[tuple[str, WireModel] | Deferred] | None = None

    @property
    def holding(self) -> bool:
        """Whether live events are held: a gap is being filled."""
        return self._backlog is not None

    def open(self) -> None:
        """A gap was reported: hold live events from now until ``fill`` has caught up."""
        if self._backlog is None:
            self._backlog = deque()

    def hold(self, method: str, params: WireModel) -> bool:
        """Queue a live event behind the gap being filled; False when it is to be handled now."""
        backlog = self._backlog
        if backlog is None or len(backlog) >= self._limit:
            return False
        backlog.append((method, params))
        return True

    def defer(self, work: Deferred) -> bool:
        """Hold live events from now until ``work`` has run; False when nothing runs them yet,
        and the caller is to run ``drain`` (in a task). Deferred while an event is handled,
        ``work`` runs next: every event held arrived after that one."""
        if self._backlog is not None:
            self._backlog.appendleft(work)
            return True
        self._backlog = deque([work])
        return False

    async def fill(self, gap: msp.ViewGapParams | None) -> None:
        """Handle the missed events of ``gap``, then the held live ones, in order; a page that
        cannot be read goes to ``on_failure``, and live events stay held."""
        try:
            await self._fill(gap)
        except RpcError as failure:
            self._on_failure(failure)

    async def drain(self) -> None:
        """``fill`` without a gap: what ``defer`` held, in order."""
        await self.fill(None)

    async def _fill(self, gap: msp.ViewGapParams | None) -> None:
        while True:
            if gap is not None:
                cut: list[int] = []
                async for method, params in missed_events(self._read_page, gap, cut):
                    await self._handle(method, params)
                    await self._run_deferred()  # what handling it deferred comes next
                if cut:
                    await self._tell_cut(cut[0])
            backlog = self._backlog
            while backlog:
                held = backlog.popleft()
                if not isinstance(held, tuple):
                    await held()
                    continue
                method, params = held
                if isinstance(params, msp.ViewGapParams):
                    gap = params
                    break
                await self._handle(method, params)
            else:
                self._backlog = None
                return

    async def _run_deferred(self) -> None:
        backlog = self._backlog
        while backlog:
            work = backlog[0]
            if isinstance(work, tuple):
                return
            backlog.popleft()
            await work()

    async def _tell_cut(self, shown: int) -> None:
        if self._notices is None:
            return
        text = (
            f"Muse sent more than {shown} events while muse-acp could not follow the session "
            "live; the first of them are shown and the rest of this stretch is not, though "
            "Muse keeps them (load the session again to see its whole history)."
        )
        # Before notices this was only logged: a plain client still hears nothing of it.
        notice = Notice("warning", "Part of this turn's output was not shown", text, chat=False)
        with suppress(ConnectionClosed):  # the client has gone: nobody to tell
            await self._notices.tell(notice)
