"""What a kept read host remembers between reads, and when it stops."""

from __future__ import annotations

from typing import cast

import anyio
import pytest

from muse_acp.agent import read_hosts
from muse_acp.agent.read_hosts import MAX_PROOFS, ReadHost
from muse_acp.host.client import MspHost
from muse_acp.msp_types import msp

pytestmark = pytest.mark.anyio

WAIT = 5.0


class _StubHost:
    def __init__(self) -> None:
        self.dead = anyio.Event()


def _kept() -> ReadHost:
    return ReadHost(cast(MspHost, _StubHost()))


def _item(item_id: str, revision: int = 1) -> msp.ToolCallItem:
    return msp.ToolCallItem.model_validate(
        {
            "itemId": item_id,
            "kind": "toolCall",
            "turnId": "turn-1",
            "revision": revision,
            "status": "completed",
            "tool": "bash",
            "callId": "call-1",
            "args": "{}",
        },
        by_alias=True,
        by_name=False,
    )


def test_a_proof_holds_only_at_the_view_cursor_it_was_made_at() -> None:
    kept = _kept()
    item = _item("item-1")
    kept.prove("item-1", "v:s:7", item)
    assert kept.proven("item-1", "v:s:7") is item
    assert kept.proven("item-1", "v:s:8") is None
    assert kept.proven("item-2", "v:s:7") is None
    newer = _item("item-1", revision=2)
    kept.prove("item-1", "v:s:8", newer)
    assert kept.proven("item-1", "v:s:8") is newer
    assert kept.proven("item-1", "v:s:7") is None


def test_an_empty_view_cursor_proves_nothing() -> None:
    kept = _kept()
    kept.prove("item-1", "", _item("item-1"))
    assert kept.proven("item-1", "") is None


def test_proofs_are_bounded_and_the_least_recently_proved_goes_first() -> None:
    kept = _kept()
    for index in range(MAX_PROOFS + 1):
        kept.prove(f"item-{index}", "v:s:1", _item(f"item-{index}"))
    assert kept.proven("item-0", "v:s:1") is None
    assert kept.proven("item-1", "v:s:1") is not None
    assert kept.proven(f"item-{MAX_PROOFS}", "v:s:1") is not None


async def test_an_idle_read_host_stops_after_the_idle_period_but_not_while_in_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(read_hosts, "READ_HOST_IDLE", 0.05)
    kept = _kept()
    kept.users = 1
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_hosts._idle_out, kept)
            with anyio.move_on_after(0.2):
                await kept.stop.wait()
            assert kept.usable, "a host in use is never idle"
            kept.users = 0
            kept.activity.set()
            await kept.stop.wait()
    assert not kept.usable


async def test_a_read_host_that_dies_is_no_longer_usable() -> None:
    kept = _kept()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_hosts._idle_out, kept)
            kept.host.dead.set()
    assert not kept.usable
