"""Replaying a long history: Muse reads the next page while the adapter sends the one before,
every event still reaches the client once, in order, and no page past the bound is read."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
import pytest

from muse_acp.agent.cards.output_cards import BASELINE_OUTPUT
from muse_acp.agent.context import AgentContext
from muse_acp.agent.sessions import history
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.config import AdapterConfig
from muse_acp.host.client import MspHost
from muse_acp.host.features import features_of
from muse_acp.rpc import Payload
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

from .fakes import RecordingClient

pytestmark = pytest.mark.anyio

R = TypeVar("R", bound=WireModel)
SESSION = "01a24335-acba-7000-9484-6d09171a7e69"


def _prompt(n: int) -> dict[str, Any]:
    """The durable event of the ``n``-th user prompt, at cursor ``n``."""
    item = {
        "itemId": f"item-{n}",
        "kind": "userMessage",
        "turnId": f"turn-{n}",
        "revision": 1,
        "status": "completed",
        "text": f"prompt {n}",
    }
    params = {"sessionId": SESSION, "viewCursor": f"v:{SESSION}:{n}", "item": item}
    return {"method": "item/completed", "params": params}


class PagedHost:
    """Answers ``view/page`` with ``pages`` pages of ``per_page`` prompts each, and notes when
    each page was asked for."""

    def __init__(self, pages: int, per_page: int) -> None:
        self.features = features_of("1.4.2", trust_newer=False)
        self.pages = pages
        self.per_page = per_page
        self.asked: list[str | None] = []
        self.second_asked = anyio.Event()

    async def call(self, method: str, params: WireModel | None, result_type: type[R]) -> R:
        assert method == "view/page"
        assert isinstance(params, msp.ViewPageParams)
        self.asked.append(params.cursor)
        if len(self.asked) == 2:
            self.second_asked.set()
        index = 0 if params.cursor is None else int(params.cursor.rsplit(":", 1)[1])
        first = index * self.per_page + 1
        events = [_prompt(n) for n in range(first, first + self.per_page)]
        more = index + 1 < self.pages
        result = {"events": events, "nextCursor": f"v:{SESSION}:{index + 1}" if more else None}
        return result_type.model_validate(result)


class SlowClient(RecordingClient):
    """A client that takes the first update only once Muse was asked for the second page."""

    def __init__(self, host: PagedHost) -> None:
        super().__init__()
        self.host = host

    async def notify(self, method: str, params: Payload = None) -> None:
        await self.host.second_asked.wait()
        await super().notify(method, params)

    def send_notification_nowait(
        self, frame: bytes, *, now: bool = False, hand_over: bool = False
    ) -> bool:
        return False  # its writer takes nothing at once: every update waits as above


async def test_the_next_page_is_read_while_the_page_before_is_sent_and_none_past_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history, "PAGE_SIZE", 3)
    monkeypatch.setattr(history, "MAX_PAGES", 3)
    host = PagedHost(pages=5, per_page=3)
    client = SlowClient(host)
    ctx = AgentContext(AdapterConfig(data_dir=tmp_path))
    session = AcpSession(SESSION, str(tmp_path), client, ctx.hosting)
    with anyio.fail_after(10):
        await history.replay_history(session, cast(MspHost, host), BASELINE_OUTPUT, 5.0)
    texts = []
    for update in client.updates():
        assert isinstance(update, acp.UserMessageChunkSessionUpdate)
        assert isinstance(update.content, acp.TextContentBlock)
        texts.append(update.content.text)
    # Three pages of three, in order; the page after the bound is never asked for.
    assert texts == [f"prompt {n}" for n in range(1, 10)]
    assert host.asked == [None, f"v:{SESSION}:1", f"v:{SESSION}:2"]
