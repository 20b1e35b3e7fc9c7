"""A host's events reach the session's listener by the short way, in the order the host wrote
them, on every simulated Muse version; its streamed deltas reach the running turn's taker,
exactly as they reach a listener without one."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from muse_acp.host.client import MspHost, open_host
from muse_acp.host.event_lane import DELTA as METHOD
from muse_acp.ids import new_uuid7
from muse_acp_wire import msp
from muse_acp_wire._base import WireModel

from .harness import WAIT, make_world

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
DELTAS = 40


class Recorder:
    """A listener and a delta taker for one session, recording what each was handed."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.taken: list[str] = []
        self.heard: list[tuple[str, str | None]] = []
        """Every event heard: its method, and the item it is about (None: not an item's)."""
        self.completed = anyio.Event()

    async def listen(self, method: str, params: WireModel) -> None:
        item = getattr(params, "item", None)
        self.heard.append(
            (method, getattr(params, "item_id", None) or getattr(item, "item_id", None))
        )
        if isinstance(params, msp.ItemDeltaParams):
            self.events.append(f"{method} {params.field} {params.delta}")
        elif isinstance(params, msp.TurnCompletedParams):
            self.completed.set()

    def take(self, params: msp.ItemDeltaParams) -> None:
        self.taken.append(f"{METHOD} {params.field} {params.delta}")


async def _turn(host: MspHost, session_id: str, recorder: Recorder) -> None:
    params = msp.TurnStartParams(
        command_id=new_uuid7(),
        session_id=session_id,
        input=[msp.TextTurnInputPart(type="text", text=f"sim:stream {DELTAS}")],
    )
    with anyio.fail_after(WAIT):
        await host.call("turn/start", params, msp.TurnStartResult)
        await recorder.completed.wait()


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_turns_deltas_go_to_its_taker_and_to_the_listener_once_it_has_none(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with open_host(
        str(world.muse_bin), cwd=str(world.workspace), env=world.env(), startup_timeout=WAIT
    ) as host:
        session_id = new_uuid7()
        start = msp.SessionStartParams(
            command_id=new_uuid7(), session_id=session_id, workspace_root=str(world.workspace)
        )
        with anyio.fail_after(WAIT):
            await host.call("session/start", start, msp.SessionStartResult)

        short = Recorder()
        listening = host.listen(session_id, short.listen, short.take)
        await _turn(host, session_id, short)
        listening.close()

        # A later listener that brings no taker is handed every delta the ordinary way, and the
        # first one's taker, gone with its registration, none.
        plain = Recorder()
        listening = host.listen(session_id, plain.listen)
        await _turn(host, session_id, plain)
        listening.close()

    texts = [f"{METHOD} text t{index} " for index in range(DELTAS)]
    assert [delta for delta in short.taken if " text " in delta] == texts
    assert short.taken == plain.events  # the reasoning summary's deltas too, in the same order
    assert short.events == []
    assert plain.taken == []
    for heard in (short.heard, plain.heard):
        methods = [method for method, _ in heard]
        items = [index for index, (_, item) in enumerate(heard) if item is not None]
        assert methods.index("turn/started") < items[0]
        assert methods.index("turn/completed") > items[-1]
        # Each item's events in the order Muse writes them: started, its deltas, completed.
        for item in {item for _, item in heard if item is not None}:
            of_item = [method for method, about in heard if about == item]
            assert of_item[0] == "item/started" or of_item == ["item/completed"], of_item
            assert of_item[-1] == "item/completed", of_item
