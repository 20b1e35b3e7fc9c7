"""The host's delta lane takes an ``item/delta`` frame only when the ordinary way (decoding,
then the router) would make the very same params of it, and declines everything else."""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any, Final

import anyio
import pytest
from hypothesis import given, settings, strategies as st

from muse_acp.host.delta_lane import METHOD, DeltaLane
from muse_acp.rpc import Connection, FrameReader, FrameWriter, NotificationRoute, Router
from muse_acp.rpc.decoding import MAX_INTEGER_DIGITS, MAX_NESTING_DEPTH
from muse_acp_wire import msp
from tests.rpc.harness import WAIT, OneRead, Writes

SESSION: Final = "01a23b0c-6069-7000-9019-3671895685f4"
PARAMS: Final[dict[str, Any]] = {
    "sessionId": SESSION,
    "viewCursor": f"v:{SESSION}:4.2",
    "itemId": "01a23b0c-6078-7000-93c1-0e156a8318b4",
    "field": "text",
    "delta": "Hello — Muse",
}


def frame(params: dict[str, Any] | None = None, *, ascii_only: bool = False, **top: Any) -> bytes:
    """An item/delta notification as hosts write it: jsonrpc, method, params, then the rest."""
    message = {"jsonrpc": "2.0", "method": METHOD, "params": PARAMS if params is None else params}
    message.update(top)
    return json.dumps(message, separators=(",", ":"), ensure_ascii=ascii_only).encode()


def ordinary(data: bytes) -> list[msp.ItemDeltaParams]:
    """What a host connection without the lane hands on for ``data``: every frame the router's
    ``item/delta`` route received, validated with the model the host client routes it with."""
    got: list[msp.ItemDeltaParams] = []

    async def take(params: msp.ItemDeltaParams) -> None:
        got.append(params)

    async def serve() -> None:
        model = msp.CLIENT_NOTIFICATIONS[METHOD].params
        assert model is msp.ItemDeltaParams
        router = Router((), [NotificationRoute(METHOD, model, take)])
        reader = FrameReader(OneRead(data + b"\n"))
        connection = Connection(
            reader, FrameWriter(Writes()), router, name="host", cancel_method=None
        )
        with anyio.fail_after(WAIT):
            await connection.serve()

    anyio.run(serve)
    return got


def through_lane(data: bytes) -> msp.ItemDeltaParams | None:
    """The params the lane hands its taker for ``data``, or None when it declines it."""
    got: list[msp.ItemDeltaParams] = []
    lane = DeltaLane()
    lane.register(SESSION, got.append)
    taken = lane(data)
    assert taken is True or taken is False
    assert len(got) == int(taken)
    return got[0] if got else None


def assert_same(data: bytes) -> bool:
    """The lane's params equal the ordinary way's whenever the lane takes ``data``."""
    taken = through_lane(data)
    if taken is None:
        return False
    [expected] = ordinary(data)
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
        pytest.param(frame().replace(METHOD.encode(), b"item/started"), id="another method"),
        pytest.param(frame().replace(b'","method"', b'", "method"'), id="spelled another way"),
        pytest.param(frame({**PARAMS, "sessionId": "someone-else"}), id="a session without taker"),
        pytest.param(frame()[:-1], id="not JSON"),
    ],
)
def test_anything_else_is_left_to_the_ordinary_way(data: bytes) -> None:
    assert through_lane(data) is None


def test_a_frame_the_lane_declines_still_reaches_the_router_the_ordinary_way() -> None:
    data = frame().replace(b'","method"', b'", "method"')
    assert through_lane(data) is None
    [routed] = ordinary(data)
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


@pytest.mark.anyio
async def test_a_taker_that_must_wait_hands_the_rest_to_the_connection() -> None:
    lane = DeltaLane()
    finished: list[str] = []

    async def rest(params: msp.ItemDeltaParams) -> None:
        finished.append(params.delta)

    def taker(params: msp.ItemDeltaParams) -> Awaitable[None] | None:
        return rest(params)

    lane.register(SESSION, taker)
    left = lane(frame())
    assert not isinstance(left, bool)
    await left
    assert finished == [PARAMS["delta"]]


def test_a_session_registered_to_nobody_is_no_longer_taken() -> None:
    lane = DeltaLane()
    got: list[msp.ItemDeltaParams] = []
    lane.register(SESSION, got.append)
    assert lane(frame()) is True
    lane.register(SESSION, None)
    assert lane(frame()) is False
    assert len(got) == 1


def test_the_lane_validates_with_the_model_the_host_client_routes_item_delta_with() -> None:
    assert msp.CLIENT_NOTIFICATIONS[METHOD].params is msp.ItemDeltaParams
