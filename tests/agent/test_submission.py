"""A turn written at once (``submission.submit_at_once``): Muse, which has nothing to do until it
reads ``turn/start``, is handed the core as it is written; a turn that cannot go at once is
neither sent nor held."""

from __future__ import annotations

from typing import Any, cast

from muse_acp.agent.turns.submission import submit_at_once, turn_start_params
from muse_acp.host.client import MspHost
from muse_acp_wire import msp


class AtOnceHost:
    """Records what ``submit_at_once`` asks of a host, and takes nothing."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, bool]] = []

    def start_at_once(self, method: str, params: Any, *, hand_over: bool = False) -> None:
        self.asked.append((method, hand_over))


def test_a_turn_written_at_once_hands_the_core_to_muse() -> None:
    host = AtOnceHost()
    part = msp.TextTurnInputPart(type="text", text="hello")
    params = turn_start_params("session-1", [part], None, None)
    assert submit_at_once(cast(MspHost, host), params, hold_limit=8) is None
    assert host.asked == [("turn/start", True)]
