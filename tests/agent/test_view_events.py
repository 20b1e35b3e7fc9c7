"""Filling a ``view/gap``: a gap cut at its bound is told to the user, one that ends is not."""

from __future__ import annotations

import pytest

from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.translation.view_events import (
    GAP_PAGE_SIZE,
    MAX_GAP_PAGES,
    GapFiller,
    PageReader,
)
from muse_acp.rpc import RpcError
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

pytestmark = pytest.mark.anyio

GAP = msp.ViewGapParams(session_id="s-1", after="c-0", next="c-end")


class Notices:
    def __init__(self) -> None:
        self.told: list[Notice] = []

    async def tell(self, notice: Notice) -> None:
        self.told.append(notice)


def _pages(total: int) -> tuple[list[msp.ViewPageParams], PageReader]:
    """A view of ``total`` missed events (then the live one at ``c-end``), and its reads."""
    asked: list[msp.ViewPageParams] = []

    async def read(params: msp.ViewPageParams) -> msp.ViewPageResult:
        asked.append(params)
        start = len(asked) * GAP_PAGE_SIZE - GAP_PAGE_SIZE
        events = [
            msp.ViewEvent(method="turn/started", params={"viewCursor": f"c-{n}"})
            for n in range(start + 1, min(start + GAP_PAGE_SIZE, total) + 1)
        ]
        if start + GAP_PAGE_SIZE >= total:
            events.append(msp.ViewEvent(method="turn/started", params={"viewCursor": "c-end"}))
        return msp.ViewPageResult(events=events, next_cursor=f"c-{start + GAP_PAGE_SIZE}")

    return asked, read


async def _fill(total: int, notices: Notices | None) -> list[msp.ViewPageParams]:
    asked, read = _pages(total)

    async def handle(method: str, params: WireModel) -> None:
        return None

    def failed(error: RpcError) -> None:
        raise AssertionError(error)

    filler = GapFiller(read, handle, 10, failed, notices)
    filler.open()
    await filler.fill(GAP)
    assert not filler.holding
    return asked


async def test_a_gap_cut_at_its_bound_is_told_once_as_a_logged_warning() -> None:
    notices = Notices()
    asked = await _fill(MAX_GAP_PAGES * GAP_PAGE_SIZE + 1, notices)
    assert len(asked) == MAX_GAP_PAGES
    [notice] = notices.told
    assert (notice.severity, notice.chat) == ("warning", False)
    assert notice.title == "Part of this turn's output was not shown"
    assert f"more than {MAX_GAP_PAGES * GAP_PAGE_SIZE} events" in notice.text


async def test_a_gap_filled_in_full_tells_nothing() -> None:
    notices = Notices()
    asked = await _fill(3 * GAP_PAGE_SIZE - 5, notices)
    assert len(asked) == 3
    assert notices.told == []


async def test_a_filler_without_notices_still_fills_a_long_gap() -> None:
    asked = await _fill(MAX_GAP_PAGES * GAP_PAGE_SIZE + 1, None)
    assert len(asked) == MAX_GAP_PAGES
