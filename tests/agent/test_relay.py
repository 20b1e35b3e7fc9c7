"""The event relay's short way for text deltas: each text's first words are written at once, and
an answer's hand the core to the client."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import pytest

from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.translation.translate import TurnTranslator, Update
from muse_acp.agent.turns.relay import EventRelay
from muse_acp_wire import msp

pytestmark = pytest.mark.anyio

TURN: Final = "turn-1"
ENVELOPE: Final = {"sessionId": "host-sess", "viewCursor": "v:host-sess:1"}


class Outlet:
    """Takes every chunk at once and records whether it was to be written at once, and whether
    the client was to read it before the relay goes on."""

    def __init__(self) -> None:
        self.sent: list[tuple[Update, bool]] = []
        self.handed_over: list[bool] = []

    @property
    def takes_children(self) -> bool:
        return False

    def send_nowait(self, update: Update, *, now: bool = False, hand_over: bool = False) -> bool:
        self.sent.append((update, now))
        self.handed_over.append(hand_over)
        return True

    async def tell(self, notice: Notice) -> None:
        raise AssertionError("no notice expected")

    async def send_unless_gone(
        self, update: Update, write: Callable[[Awaitable[None]], Awaitable[None]] | None = None
    ) -> bool:
        raise AssertionError("every chunk goes the short way")


async def _send(update: Update) -> None:
    raise AssertionError("every chunk goes the short way")


def _event(method: str, params: dict[str, Any]) -> Any:
    spec = msp.CLIENT_NOTIFICATIONS[method]
    assert spec.params is not None
    return spec.params.model_validate({**ENVELOPE, **params})


def _started(item_id: str, kind: str) -> Any:
    item = {"itemId": item_id, "kind": kind, "turnId": TURN, "revision": 1, "status": "inProgress"}
    if kind == "reasoning":
        item["summary"] = []
    else:
        item["text"] = ""
    return _event("item/started", {"item": item})


def _delta(item_id: str, text: str, field: str = "text") -> msp.ItemDeltaParams:
    params = _event("item/delta", {"itemId": item_id, "field": field, "delta": text})
    assert isinstance(params, msp.ItemDeltaParams)
    return params


async def test_the_first_delta_of_each_text_is_written_at_once_and_the_rest_in_bursts() -> None:
    outlet = Outlet()
    translator = TurnTranslator(session_id="sess-1", turn_id=TURN)
    relay = EventRelay(translator, _send, outlet)
    await relay.relay("item/started", _started("rs-1", "reasoning"))
    await relay.relay("item/started", _started("msg-1", "agentMessage"))
    deltas = [
        _delta("rs-1", "Planning", "summary.0"),
        _delta("rs-1", " a reply", "summary.0"),
        _delta("msg-1", "Say "),
        _delta("msg-1", "hello."),
    ]
    for params in deltas:
        assert relay.relay_now(params) is None
    assert [now for _, now in outlet.sent] == [True, False, True, False]


async def test_only_the_first_words_of_each_answer_hand_the_core_to_the_client() -> None:
    outlet = Outlet()
    relay = EventRelay(TurnTranslator(session_id="sess-1", turn_id=TURN), _send, outlet)
    for item_id, kind in (("rs-1", "reasoning"), ("msg-1", "agentMessage")):
        await relay.relay("item/started", _started(item_id, kind))
    await relay.relay("item/started", _started("msg-2", "agentMessage"))
    deltas = [
        _delta("rs-1", "Planning", "summary.0"),  # a thought's first words: written at once only
        _delta("msg-1", "Say "),
        _delta("msg-1", "hello."),
        _delta("rs-1", "More", "summary.0"),
        _delta("msg-2", "And "),  # the next answer's first words
        _delta("msg-2", "more."),
    ]
    for params in deltas:
        assert relay.relay_now(params) is None
    assert outlet.handed_over == [False, True, False, False, True, False]
