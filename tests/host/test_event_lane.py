"""A host's event lane takes a session's event only when the ordinary way (decoding, then the
router) would make the very same params of it, hands it to that session's listener (a delta to
its taker, when it has one), and declines everything else."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from hypothesis import given, settings, strategies as st

from muse_acp.host.event_lane import DELTA, SESSION_EVENTS, EventLane
from muse_acp.rpc import Connection, FrameReader, FrameWriter, NotificationRoute, Router
from muse_acp.rpc.decoding import MAX_INTEGER_DIGITS, MAX_NESTING_DEPTH
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel
from tests.rpc.harness import WAIT, OneRead, Writes

METHOD: Final = DELTA
SESSION: Final = "01a23b0c-6069-7000-9019-3671895685f4"
PARAMS: Final[dict[str, Any]] = {
    "sessionId": SESSION,
    "viewCursor": f"v:{SESSION}:4.2",
    "itemId": "01a23b0c-6078-7000-93c1-0e156a8318b4",
    "field": "text",
    "delta": "Hello — Muse",
}
TRACES: Final = Path(__file__).parent.parent / "fixtures" / "traces"


def frame(params: dict[str, Any] | None = None, *, ascii_only: bool = False, **top: Any) -> bytes:
    """An item/delta notification as hosts write it: jsonrpc, method, params, then the rest."""
    message = {"jsonrpc": "2.0", "method": METHOD, "params": PARAMS if params is None else params}
    message.update(top)
    return json.dumps(message, separators=(",", ":"), ensure_ascii=ascii_only).encode()


def ordinary(data: bytes) -> list[tuple[str, WireModel]]:
    """What a host connection without the lane hands on for ``data``: every frame a route of
    the host client's session events received, validated with the model it routes it with."""
    got: list[tuple[str, WireModel]] = []

    def route(method: str, model: type[WireModel]) -> NotificationRoute[WireModel]:
        async def take(params: WireModel) -> None:
            got.append((method, params))

        return NotificationRoute(method, model, take)

    async def serve() -> None:
        router = Router((), [route(method, model) for method, model in SESSION_EVENTS.items()])
        reader = FrameReader(OneRead(data + b"\n"))
        connection = Connection(
            reader, FrameWriter(Writes()), router, name="host", cancel_method=None
        )
        with anyio.fail_after(WAIT):
            await connection.serve()

    anyio.run(serve)
    return got


class Listener:
    """One session's listener and delta taker, keeping what each was handed."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, WireModel]] = []
        self.taken: list[msp.ItemDeltaParams] = []

    async def listen(self, method: str, params: WireModel) -> None:
        self.heard.append((method, params))

    def take(self, params: msp.ItemDeltaParams) -> None:
        self.taken.append(params)


def handed(lane: EventLane, data: bytes) -> bool:
    """Offer ``data`` to ``lane``, running what is left of a frame it took; whether it took it."""
    taken = lane(data)
    if isinstance(taken, bool):
        return taken

    async def finish() -> None:
        await taken

    anyio.run(finish)
    return True


def through_lane(data: bytes) -> msp.ItemDeltaParams | None:
    """The params the lane hands its taker for the delta ``data``, or None when it declines it."""
    lane = EventLane(SESSION_EVENTS)
    listener = Listener()
    lane.register(SESSION, listener.listen, listener.take)
    taken = handed(lane, data)
    assert not listener.heard, "a delta goes to the taker when there is one"
    assert len(listener.taken) == int(taken)
    return listener.taken[0] if listener.taken else None


def assert_same(data: bytes) -> bool:
    """The lane's params equal the ordinary way's whenever the lane takes ``data``."""
    taken = through_lane(data)
    if taken is None:
        return False
    [(method, expected)] = ordinary(data)
    assert method == METHOD
    assert type(taken) is type(expected)
    assert taken.model_dump(by_alias=True) == expected.model_dump(by_alias=True)
    return True


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(frame(), id="as hosts write it, with raw UTF-8"),
        pytest.param(frame(emittedAtMs=1796286996601), id="with the host's emission time"),
        pytest.param(frame({**PARAMS, "delta": 'a "quote", a \\ and a\nline'}), id="escapes"),
        pytest.param(frame({**PARAMS, "future": {"more": [1, 2.5]}}), id="an unknown member"),
        pytest.param(frame({**PARAMS, "field": "summary.0"}), id="a reasoning summary"),
        pytest.param(frame(ascii_only=True), id="a \\u escape"),
        pytest.param(frame({**PARAMS, "delta": "NaN, Infinity, id"}), id="words, not values"),
        pytest.param(frame({**PARAMS, "field": "id"}), id="an id as a value"),
    ],
)
def test_a_plain_delta_is_taken_with_the_very_params_the_router_would_give(data: bytes) -> None:
    assert assert_same(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(frame(id=7), id="an id: a request, not a notification"),
        pytest.param(frame(id=None), id="a null id"),
        pytest.param(frame().replace(b',"params"', b',"weight":NaN,"params"'), id="a NaN member"),
        pytest.param(frame().replace(b"}}", b',"big":Infinity}}'), id="Infinity"),
        pytest.param(frame().replace("—".encode(), b"\\ud800"), id="an escaped lone surrogate"),
        pytest.param(
            frame(
                {**PARAMS, "deep": json.loads("[" * MAX_NESTING_DEPTH + "]" * MAX_NESTING_DEPTH)}
            ),
            id="nesting past the limit",
        ),
        pytest.param(
            frame({**PARAMS, "count": int("9" * (MAX_INTEGER_DIGITS + 1))}),
            id="an integer past the limit",
        ),
        pytest.param(frame({**PARAMS, "delta": 5}), id="params that do not validate"),
        pytest.param(
            frame({k: v for k, v in PARAMS.items() if k != "itemId"}), id="a missing member"
        ),
        pytest.param(
            frame().replace(b'"jsonrpc":"2.0"', b'"jsonrpc":"1.0"'), id="not JSON-RPC 2.0"
        ),
        pytest.param(frame().replace(METHOD.encode(), b"item/begun"), id="an unknown method"),
        pytest.param(frame().replace(b'","method"', b'", "method"'), id="spelled another way"),
        pytest.param(frame({**PARAMS, "sessionId": "someone-else"}), id="nobody's session"),
        pytest.param(frame()[:-1], id="not JSON"),
    ],
)
def test_anything_else_is_left_to_the_ordinary_way(data: bytes) -> None:
    assert through_lane(data) is None


def test_a_frame_the_lane_declines_still_reaches_the_router_the_ordinary_way() -> None:
    data = frame().replace(b'","method"', b'", "method"')
    assert through_lane(data) is None
    [(_, routed)] = ordinary(data)
    assert routed.model_dump(by_alias=True) == PARAMS


@settings(max_examples=300, deadline=None)
@given(
    st.text(),
    st.dictionaries(
        st.text(max_size=6).filter(lambda key: key not in PARAMS),
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        max_size=3,
    ),
    st.booleans(),
)
def test_whatever_the_text_the_lane_and_the_router_agree(
    text: str, extra: dict[str, Any], ascii_only: bool
) -> None:
    assert_same(frame({**PARAMS, "delta": text, **extra}, ascii_only=ascii_only))


def recorded_events() -> Iterator[bytes]:
    """Every notification the recorded traces show a host writing, written back as hosts
    write them (compact, members in their order)."""
    for path in sorted(TRACES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            message = record.get("frame")
            if (
                str(record.get("on", "")).startswith("msp")
                and record.get("dir") == "in"
                and isinstance(message, dict)
                and "method" in message
                and "id" not in message
            ):
                yield json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def test_every_event_hosts_were_seen_writing_reaches_its_listener_as_the_router_gives_it() -> None:
    taken: set[str] = set()
    for data in recorded_events():
        routed = ordinary(data)
        session_id = json.loads(data).get("params", {}).get("sessionId")
        lane = EventLane(SESSION_EVENTS)
        listener = Listener()
        if isinstance(session_id, str):
            lane.register(session_id, listener.listen)
        if not handed(lane, data):
            assert not listener.heard
            continue
        # Taken: only what the router would have handed on, with the very same params.
        [(method, expected)] = routed
        [(heard_method, heard)] = listener.heard
        assert heard_method == method
        assert type(heard) is type(expected)
        assert heard.model_dump(by_alias=True) == expected.model_dump(by_alias=True)
        taken.add(method)
    # The events of a turn all take the short way, not only its deltas.
    assert {"turn/started", "item/started", "item/delta", "item/completed"} <= taken
    assert {"session/tokenUsage", "turn/completed"} <= taken


def event(method: str, params: dict[str, Any]) -> bytes:
    """A notification as hosts write it."""
    message = {"jsonrpc": "2.0", "method": method, "params": params}
    return json.dumps(message, separators=(",", ":")).encode()


STARTED: Final = {
    "commandId": "01a23b0c-6060-7000-9019-3671895685f4",
    "sessionId": SESSION,
    "sourceRange": {"start": 0, "end": 1},
    "turnId": "01a23b0c-6061-7000-9019-3671895685f4",
    "viewCursor": f"v:{SESSION}:4.3",
}


def test_an_event_is_left_to_the_ordinary_way_when_nobody_listens_to_its_session() -> None:
    lane = EventLane(SESSION_EVENTS)
    listener = Listener()
    lane.register("someone-else", listener.listen)
    assert ordinary(event("turn/started", STARTED)), "the router would take it"
    assert handed(lane, event("turn/started", STARTED)) is False
    lane.register("someone-else", None)
    lane.register(SESSION, listener.listen)
    assert handed(lane, event("turn/started", STARTED)) is True
    lane.register(SESSION, None)
    assert handed(lane, event("turn/started", STARTED)) is False
    assert [method for method, _ in listener.heard] == ["turn/started"]


def test_events_without_a_session_and_asks_are_left_to_the_ordinary_way() -> None:
    lane = EventLane(SESSION_EVENTS)
    listener = Listener()
    lane.register(SESSION, listener.listen)
    host_wide = event("usage/changed", {})  # every session's listener is given it
    assert handed(lane, host_wide) is False
    assert "approval/requested" not in SESSION_EVENTS  # read as an ask first (``asks``)
    ask = event("approval/requested", {"sessionId": SESSION, "requestId": "r-1"})
    assert handed(lane, ask) is False
    assert not listener.heard


@pytest.mark.anyio
async def test_a_taker_that_must_wait_hands_the_rest_to_the_connection() -> None:
    lane = EventLane(SESSION_EVENTS)
    finished: list[str] = []

    async def rest(params: msp.ItemDeltaParams) -> None:
        finished.append(params.delta)

    def taker(params: msp.ItemDeltaParams) -> Awaitable[None] | None:
        return rest(params)

    lane.register(SESSION, Listener().listen, taker)
    left = lane(frame())
    assert not isinstance(left, bool)
    await left
    assert finished == [PARAMS["delta"]]


def test_a_session_registered_to_nobody_is_no_longer_taken() -> None:
    lane = EventLane(SESSION_EVENTS)
    listener = Listener()
    lane.register(SESSION, listener.listen, listener.take)
    assert lane(frame()) is True
    lane.register(SESSION, None)
    assert lane(frame()) is False
    assert len(listener.taken) == 1


def test_a_listener_without_a_taker_is_handed_the_deltas_itself() -> None:
    lane = EventLane(SESSION_EVENTS)
    listener = Listener()
    lane.register(SESSION, listener.listen, listener.take)
    lane.register(SESSION, listener.listen)  # registered again, without a taker
    assert handed(lane, frame()) is True
    assert not listener.taken
    assert [method for method, _ in listener.heard] == [DELTA]


def test_the_lane_validates_with_the_models_the_host_client_routes_with() -> None:
    assert SESSION_EVENTS[METHOD] is msp.ItemDeltaParams is msp.CLIENT_NOTIFICATIONS[METHOD].params
    assert SESSION_EVENTS["turn/started"] is msp.TurnStartedParams


@pytest.mark.anyio
async def test_a_listener_that_fails_is_logged_and_the_connection_reads_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lane = EventLane(SESSION_EVENTS)
    heard: list[str] = []

    async def listener(method: str, params: WireModel) -> None:
        heard.append(method)
        if len(heard) == 1:
            raise RuntimeError("a listener's own fault")

    lane.register(SESSION, listener)
    data = event("turn/started", STARTED) + b"\n" + event("turn/started", STARTED) + b"\n"
    connection = Connection(
        FrameReader(OneRead(data)),
        FrameWriter(Writes()),
        Router((), []),
        name="host",
        cancel_method=None,
        lane=lane,
    )
    with caplog.at_level(logging.ERROR, logger="muse_acp.rpc"), anyio.fail_after(WAIT):
        await connection.serve()
    assert heard == ["turn/started", "turn/started"]
    assert "handler of a notification failed" in caplog.text
