"""A session's update outlet: what it notes on the way out, its client-gone guard, and the
event lane's nowait sends beside the awaited ones."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
import pytest

from muse_acp.agent.context import AgentContext
from muse_acp.agent.errors.notices import Notice
from muse_acp.agent.sessions.outlet import UpdateOutlet
from muse_acp.agent.sessions.session import AcpSession, ClientLink
from muse_acp.agent.translation.goal_state import GoalSeen, goal_update
from muse_acp.agent.translation.status import ContextUse
from muse_acp.agent.translation.translate import PlainChunk, Update
from muse_acp.agent.translation.usage import HostCost, PlanUse, TokenUse, WindowUse, with_usage
from muse_acp.config import AdapterConfig
from muse_acp.rpc import ConnectionClosed, Payload, RawJson, encode_notification
from muse_acp.rpc.jsonvalue import JsonValue
from muse_acp_wire import acp, msp

from .fakes import RecordingClient

pytestmark = pytest.mark.anyio

CHUNK = PlainChunk("agent", "message-1", 'Hello, 世界 "quoted"\n')


def _session(tmp_path: Path, client: RecordingClient | None = None) -> AcpSession:
    ctx = AgentContext(AdapterConfig(data_dir=tmp_path))
    return AcpSession("outlet-session", str(tmp_path), client or RecordingClient(), ctx.hosting)


def _title(title: str) -> acp.SessionInfoUpdateSessionUpdate:
    return acp.SessionInfoUpdateSessionUpdate(session_update="session_info_update", title=title)


def _sent(client: ClientLink) -> list[acp.SessionUpdate]:
    assert isinstance(client, RecordingClient)
    return client.updates()


async def test_a_title_from_muse_becomes_the_host_title_when_the_user_set_none(
    tmp_path: Path,
) -> None:
    session = _session(tmp_path)
    await session.outlet.send(_title("Muse's title"))
    assert session.host_title == "Muse's title"
    assert session.title == "Muse's title"
    (sent,) = _sent(session.client)
    assert isinstance(sent, acp.SessionInfoUpdateSessionUpdate)
    assert sent.title == "Muse's title"


async def test_the_users_own_title_replaces_muses_on_the_way_out(tmp_path: Path) -> None:
    session = _session(tmp_path)
    session.host_title = "before"
    session.user_title = "Mine"
    await session.outlet.send(_title("Muse's title"))
    (sent,) = _sent(session.client)
    assert isinstance(sent, acp.SessionInfoUpdateSessionUpdate)
    assert sent.title == "Mine"
    assert session.host_title == "before", "Muse's title does not replace the user's"


async def test_a_usage_update_is_noted_for_status_and_carries_the_latest_figures(
    tmp_path: Path,
) -> None:
    session = _session(tmp_path)
    session.tokens = TokenUse(prompt=10, output=5, total=15, step=7)
    session.plan_usage = PlanUse(window_percent=40, weekly_percent=12)
    await session.outlet.send(
        acp.UsageUpdateSessionUpdate(session_update="usage_update", used=300, size=1000)
    )
    assert session.context == ContextUse(300, 1000)
    (sent,) = _sent(session.client)
    assert isinstance(sent, acp.UsageUpdateSessionUpdate)
    assert sent.field_meta == {
        "muse/usage": {
            "tokens": {"promptTokens": 10, "outputTokens": 5, "totalTokens": 15},
            "subscription": {"windowUsedPercent": 40, "weeklyUsedPercent": 12},
        }
    }


async def test_a_usage_update_that_says_nothing_new_is_not_sent_again(tmp_path: Path) -> None:
    session = _session(tmp_path)
    session.tokens = TokenUse(prompt=10, output=5, total=15, step=15)

    def window(used: int) -> acp.UsageUpdateSessionUpdate:
        return acp.UsageUpdateSessionUpdate(session_update="usage_update", used=used, size=1000)

    await session.outlet.send(window(15))
    await session.outlet.send(window(15))  # Muse's context report, agreeing with its tokens
    assert len(_sent(session.client)) == 1
    session.tokens = TokenUse(prompt=20, output=9, total=29, step=15)
    await session.outlet.send(window(15))  # same window, new totals: news
    await session.outlet.send(window(16))
    await session.outlet.send(window(15))  # back to an earlier figure: a change again
    assert [
        u.used for u in _sent(session.client) if isinstance(u, acp.UsageUpdateSessionUpdate)
    ] == [
        15,
        15,
        16,
        15,
    ]
    other = _session(tmp_path)
    await other.outlet.send(window(15))
    assert len(_sent(other.client)) == 1, "each session's outlet remembers its own"


async def test_an_announced_goal_is_noted_for_the_goal_command(tmp_path: Path) -> None:
    session = _session(tmp_path)
    await session.outlet.send(goal_update(msp.Goal(objective="Ship it", status="active")))
    assert isinstance(session.goal, GoalSeen)
    assert session.goal.goal is not None
    assert session.goal.goal.objective == "Ship it"
    await session.outlet.send(goal_update(None))
    assert session.goal == GoalSeen(None), "a cleared goal is noted as cleared"


@dataclass
class GoneClient(RecordingClient):
    """A client link whose connection ended: every awaited send raises ``ConnectionClosed``."""

    attempts: list[Payload] = field(default_factory=list)

    async def notify(self, method: str, params: Payload = None) -> None:
        self.attempts.append(params)
        raise ConnectionClosed()

    def send_notification_nowait(
        self, frame: bytes, *, now: bool = False, hand_over: bool = False
    ) -> bool:
        return False  # as a closed connection's writer: it takes nothing, notify says why

    async def request(self, method: str, params: Payload = None) -> JsonValue:
        raise ConnectionClosed()


async def test_only_the_send_that_finds_the_client_gone_says_so_and_later_ones_are_dropped(
    tmp_path: Path,
) -> None:
    client = GoneClient()
    session = _session(tmp_path, client)
    outlet = session.outlet
    assert await outlet.send_unless_gone(CHUNK) is True
    assert outlet.gone
    # Both kinds of turn share the guard: whoever sends next finds it closed, quietly.
    assert await outlet.send_unless_gone(_title("later")) is False
    assert await outlet.send_unless_gone(CHUNK) is False
    assert len(client.attempts) == 1, "nothing more is tried once the client is gone"
    with pytest.raises(ConnectionClosed):
        await outlet.send(CHUNK)  # an unguarded send still hears why it cannot


async def test_a_guarded_send_goes_through_the_callers_wrapper_and_is_noted(
    tmp_path: Path,
) -> None:
    session = _session(tmp_path)
    wrapped: list[str] = []

    async def timing(write: Awaitable[None]) -> None:
        wrapped.append("before")
        await write
        wrapped.append("after")

    assert await session.outlet.send_unless_gone(_title("Muse's"), timing) is False
    assert wrapped == ["before", "after"]
    assert session.host_title == "Muse's"
    assert not session.outlet.gone


async def test_a_nowait_chunk_is_the_same_notification_an_awaited_send_writes(
    tmp_path: Path,
) -> None:
    session = _session(tmp_path)
    client = session.client
    assert isinstance(client, RecordingClient)
    await session.outlet.send(CHUNK)
    assert session.outlet.send_nowait(CHUNK)
    (_, awaited), (_, queued) = client.notified
    assert isinstance(awaited, RawJson)
    assert isinstance(queued, RawJson)
    assert json.loads(awaited.data) == json.loads(queued.data)
    whole = encode_notification(
        "session/update", acp.SessionNotification(session_id="outlet-session", update=CHUNK.model())
    )
    assert json.loads(whole)["params"] == json.loads(queued.data)


async def test_nowait_and_awaited_sends_reach_the_client_in_the_order_they_began(
    tmp_path: Path,
) -> None:
    session = _session(tmp_path)
    outlet = session.outlet
    first = PlainChunk("agent", "message-1", "one")
    assert outlet.send_nowait(first)
    # Only a plain text chunk has a nowait way; anything else is refused, nothing sent.
    title = _title("Between")
    assert not outlet.send_nowait(title)
    assert not outlet.send_nowait(first.model())
    await outlet.send(title)
    assert outlet.send_nowait(PlainChunk("agent", "message-1", "two"))
    sent = _sent(session.client)
    assert [type(u).__name__ for u in sent] == [
        "AgentMessageChunkSessionUpdate",
        "SessionInfoUpdateSessionUpdate",
        "AgentMessageChunkSessionUpdate",
    ]
    texts = [
        u.content.text
        for u in sent
        if isinstance(u, acp.AgentMessageChunkSessionUpdate)
        and isinstance(u.content, acp.TextContentBlock)
    ]
    assert texts == ["one", "two"]


@dataclass
class BusyWriter(RecordingClient):
    """A client link whose writer takes nothing at once (the reader is behind)."""

    def send_notification_nowait(
        self, frame: bytes, *, now: bool = False, hand_over: bool = False
    ) -> bool:
        return False


async def test_a_writer_that_cannot_take_a_chunk_at_once_gets_nothing_from_nowait(
    tmp_path: Path,
) -> None:
    client = BusyWriter()
    outlet = UpdateOutlet("outlet-session", client, _session(tmp_path))
    assert outlet.send_nowait(CHUNK) is False
    assert client.notified == []
    with anyio.fail_after(5):
        await outlet.send(CHUNK)  # the caller's fallback: the awaited way
    assert [u.session_update for u in client.updates()] == ["agent_message_chunk"]


WARNED: Final = Notice("warning", "Setting not stored", "This setting applies now but not later.")
LOGGED: Final = Notice("error", "History replay was cut", "The rest is not shown.", chat=False)


async def test_a_client_with_notices_gets_every_warning_as_a_notice(tmp_path: Path) -> None:
    client = RecordingClient()
    outlet = UpdateOutlet("outlet-session", client, _session(tmp_path), notices=True)
    await outlet.tell(WARNED)
    await outlet.tell(LOGGED)
    assert [u.model_dump(by_alias=True, exclude_unset=True) for u in client.updates()] == [
        {
            "sessionUpdate": "notice",
            "severity": "warning",
            "title": "Setting not stored",
            "description": "This setting applies now but not later.",
        },
        {
            "sessionUpdate": "notice",
            "severity": "error",
            "title": "History replay was cut",
            "description": "The rest is not shown.",
        },
    ]


async def test_a_client_without_notices_gets_the_chat_text_or_nothing(tmp_path: Path) -> None:
    session = _session(tmp_path)
    await session.tell(WARNED)
    await session.tell(LOGGED)  # only ever logged before notices: still not in the chat
    (sent,) = _sent(session.client)
    assert isinstance(sent, acp.AgentMessageChunkSessionUpdate)
    assert isinstance(sent.content, acp.TextContentBlock)
    assert sent.content.text == "This setting applies now but not later."


@dataclass
class FrameClient(RecordingClient):
    """A client link keeping every ``session/update`` frame as the very bytes written."""

    frames: list[bytes] = field(default_factory=list)

    async def notify(self, method: str, params: Payload = None) -> None:
        self.frames.append(encode_notification(method, params))

    def send_notification_nowait(
        self, frame: bytes, *, now: bool = False, hand_over: bool = False
    ) -> bool:
        self.frames.append(frame)
        return True


_T1 = TokenUse(10, 5, 15, 15)
_T2 = TokenUse(20, 9, 29, 15)
_PRICED = TokenUse(20, 9, 29, 15, cost=HostCost(0.0, False))
_PLAN = PlanUse(40, 12)
_OWN_META = acp.UsageUpdateSessionUpdate(
    session_update="usage_update", used=16, size=1001, field_meta={"x": 1}
)


def _window(used: int, size: int) -> acp.UsageUpdateSessionUpdate:
    return acp.UsageUpdateSessionUpdate(session_update="usage_update", used=used, size=size)


# Each step: the session's figures, then a usage update sent: the window's use as the session
# state gives it (``WindowUse``) or as the translator does (a model), or an update of its own.
_STEPS: Final[list[tuple[TokenUse | None, PlanUse | None, Update]]] = [
    (None, None, WindowUse(15, 1000)),
    (_T1, None, WindowUse(15, 1000)),
    (_T1, None, _window(15, 1000)),  # the very figures again
    (TokenUse(10, 5, 15, 15), None, WindowUse(15, 1000)),  # equal figures, reported anew
    (_T2, None, WindowUse(15, 1000)),
    (_T2, None, _window(16, 1000)),
    (_T2, _PLAN, WindowUse(16, 1000)),
    (_T2, _PLAN, WindowUse(16, 1001)),
    (_T2, _PLAN, _OWN_META),
    (_T2, _PLAN, _window(16, 1001)),  # after an update of its own: the window's is news again
    (_PRICED, _PLAN, WindowUse(16, 1001)),
    (TokenUse(20, 9, 29, 15, cost=HostCost(-0.0, False)), _PLAN, WindowUse(16, 1001)),
    (_T2, PlanUse(40, 12), WindowUse(16, 1001)),  # equal to the one before the prices
    (_T2, PlanUse(40, 12), _window(16, 1001)),
]


async def test_usage_updates_go_out_as_each_composed_and_compared_whole_would(
    tmp_path: Path,
) -> None:
    """The outlet skips a window's update given the very figures of the last without composing
    it; what it writes is what composing every update and comparing its bytes would write."""
    client = FrameClient()
    session = _session(tmp_path, client)
    expected: list[bytes] = []
    last: bytes | None = None
    for tokens, plan, update in _STEPS:
        session.tokens, session.plan_usage = tokens, plan
        await session.outlet.send(update)
        if isinstance(update, WindowUse):
            update = update.model()
        assert isinstance(update, acp.UsageUpdateSessionUpdate)
        whole = encode_notification(
            "session/update",
            acp.SessionNotification(
                session_id="outlet-session", update=with_usage(update, tokens, plan)
            ),
        )
        if whole != last:
            expected.append(whole)
            last = whole
    assert client.frames == expected
    assert len(expected) == 11, "the steps hold three updates that say nothing new"
