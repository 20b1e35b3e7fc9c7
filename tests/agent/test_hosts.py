"""Kept hosts: idling, succession, failure mapping; and what a read host remembers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.agent.cards.output_reference import MAX_PROOFS, ProofCache
from muse_acp.agent.errors import failures
from muse_acp.agent.hosting.hosts import HostKeeper, ask
from muse_acp.agent.hosting.starting import MAX_CONCURRENT_STARTS, Hosting
from muse_acp.config import AdapterConfig, Deadlines
from muse_acp.host.client import MspHost, open_host
from muse_acp.rpc import RpcError
from muse_acp.sim.launcher import write_launcher
from muse_acp_wire import acp, msp

pytestmark = pytest.mark.anyio

WAIT = 20.0


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


HOST = object()


def test_a_proof_holds_only_at_the_view_cursor_it_was_made_at() -> None:
    proofs = ProofCache()
    item = _item("item-1")
    proofs.prove(HOST, "item-1", "v:s:7", item)
    assert proofs.proven(HOST, "item-1", "v:s:7") is item
    assert proofs.proven(HOST, "item-1", "v:s:8") is None
    assert proofs.proven(HOST, "item-2", "v:s:7") is None
    newer = _item("item-1", revision=2)
    proofs.prove(HOST, "item-1", "v:s:8", newer)
    assert proofs.proven(HOST, "item-1", "v:s:8") is newer
    assert proofs.proven(HOST, "item-1", "v:s:7") is None


def test_an_empty_view_cursor_proves_nothing() -> None:
    proofs = ProofCache()
    proofs.prove(HOST, "item-1", "", _item("item-1"))
    assert proofs.proven(HOST, "item-1", "") is None


def test_proofs_never_outlive_their_host() -> None:
    proofs = ProofCache()
    proofs.prove(HOST, "item-1", "v:s:7", _item("item-1"))
    successor = object()
    assert proofs.proven(successor, "item-1", "v:s:7") is None
    proofs.prove(successor, "item-2", "v:s:7", _item("item-2"))
    assert proofs.proven(HOST, "item-1", "v:s:7") is None


def test_proofs_are_bounded_and_the_least_recently_proved_goes_first() -> None:
    proofs = ProofCache()
    for index in range(MAX_PROOFS + 1):
        proofs.prove(HOST, f"item-{index}", "v:s:1", _item(f"item-{index}"))
    assert proofs.proven(HOST, "item-0", "v:s:1") is None
    assert proofs.proven(HOST, "item-1", "v:s:1") is not None
    assert proofs.proven(HOST, f"item-{MAX_PROOFS}", "v:s:1") is not None


def _muse(tmp_path: Path, faults: str = "") -> Path:
    return write_launcher(tmp_path / "muse", home=tmp_path / "home", faults=faults)


@pytest.fixture
async def hosting(tmp_path: Path) -> AsyncIterator[Hosting]:
    config = AdapterConfig(muse_bin=str(_muse(tmp_path)), deadlines=Deadlines(submit=2.0))
    hosting = Hosting(config, {"PATH": "/usr/bin:/bin"})
    async with anyio.create_task_group() as tasks:
        hosting.attach(tasks)
        yield hosting
        tasks.cancel_scope.cancel()


async def test_a_kept_host_idles_out_but_never_while_held(hosting: Hosting, tmp_path: Path) -> None:
    keeper = HostKeeper("test", hosting, idle=0.1)
    with anyio.fail_after(WAIT):
        host = await keeper.start(str(tmp_path))
        async with keeper.holding(host):
            with anyio.move_on_after(0.5):
                await host.process.exited.wait()
            assert keeper.host is host, "a held host is never idle"
        await keeper.wait_gone()
    assert host.process.exited.is_set()
    assert keeper.host is None


async def test_a_successor_starts_only_once_its_predecessor_is_reaped(
    hosting: Hosting, tmp_path: Path
) -> None:
    first = HostKeeper("first", hosting, idle=60)
    with anyio.fail_after(WAIT):
        old = await first.start(str(tmp_path))
        first.close()
        second = HostKeeper("second", hosting, idle=60, after=first)
        new = await second.start(str(tmp_path))
        assert old.process.exited.is_set(), "the predecessor was still running"
        assert new.process.returncode is None
        second.close()
        await second.wait_gone()


async def test_a_host_call_that_times_out_is_a_deadline_of_the_callers_phase(
    tmp_path: Path,
) -> None:
    config = AdapterConfig(muse_bin=str(_muse(tmp_path, "hang-ack:model/list")))
    hosting = Hosting(config, {"PATH": "/usr/bin:/bin"})
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            hosting.attach(tasks)
            keeper = HostKeeper("test", hosting, idle=60)
            host = await keeper.start(str(tmp_path))
            with pytest.raises(RpcError) as raised:
                await ask(
                    host, "model/list", None, msp.ModelListResult, phase="answering", budget=0.2
                )
            keeper.close()
    failure = acp.MuseFailureData.model_validate(raised.value.data).failure
    assert (failure.kind, failure.phase) == ("deadlineExceeded", "answering")


async def test_a_host_that_exits_under_a_call_is_a_host_exit_not_a_refusal(
    tmp_path: Path,
) -> None:
    config = AdapterConfig(muse_bin=str(_muse(tmp_path, "exit-before-ack:model/list")))
    hosting = Hosting(config, {"PATH": "/usr/bin:/bin"})
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            hosting.attach(tasks)
            keeper = HostKeeper("test", hosting, idle=60)
            host = await keeper.start(str(tmp_path))
            with pytest.raises(RpcError) as raised:
                await ask(host, "model/list", None, msp.ModelListResult, phase="reading", budget=5)
            keeper.close()
    assert not isinstance(raised.value, failures.HostRefusal)
    failure = acp.MuseFailureData.model_validate(raised.value.data).failure
    assert (failure.kind, failure.phase) == ("hostExited", "reading")
    assert "exit code" in raised.value.message


async def test_a_host_refusal_names_the_method_and_keeps_the_hosts_kind(
    hosting: Hosting, tmp_path: Path
) -> None:
    keeper = HostKeeper("test", hosting, idle=60)
    with anyio.fail_after(WAIT):
        host = await keeper.start(str(tmp_path))
        params = msp.SessionReadParams(session_id="no-such-session", exclude_items=True)
        with pytest.raises(failures.HostRefusal) as raised:
            await ask(
                host, "session/read", params, msp.SessionHistoryResult, phase="reading", budget=5
            )
        keeper.close()
    assert raised.value.host_kind == "sessionNotFound"
    assert "session/read" in raised.value.message


async def test_at_most_a_few_hosts_start_at_once(
    hosting: Hosting, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    starting = 0
    most = 0
    real_open_host = open_host

    @asynccontextmanager
    async def counted(*args: Any, **kwargs: Any) -> AsyncIterator[MspHost]:
        nonlocal starting, most
        starting += 1
        most = max(most, starting)
        try:
            async with real_open_host(*args, **kwargs) as host:
                starting -= 1
                yield host
        finally:
            starting = max(0, starting)

    monkeypatch.setattr("muse_acp.agent.hosting.starting.open_host", counted, raising=True)
    keepers = [HostKeeper(f"k{i}", hosting, idle=60) for i in range(MAX_CONCURRENT_STARTS + 3)]
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tasks:
            for keeper in keepers:
                tasks.start_soon(keeper.start, str(tmp_path))
        assert all(keeper.host is not None for keeper in keepers)
        for keeper in keepers:
            keeper.close()
    assert most == MAX_CONCURRENT_STARTS
