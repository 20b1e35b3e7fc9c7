"""Figure: paging through a large Muse session store with ACP ``session/list``.

Contract: ``measure`` writes session records of the world's workspace straight into
``muse-sim``'s state directory with the simulator's own ``Store`` (as hosts that had run them
would leave them; no session is started over the wire): first ``baseline`` of them, later the
rest up to ``sessions``. One ``muse-acp serve`` is initialized and lists every session of the
workspace with ``session/list`` (``cwd`` given): ``BASELINE_LISTINGS`` times over the
``baseline`` sessions, then, the rest written, once over all ``sessions``. Each of the two asks
for one untimed first page first (so the agent's kept catalog host is running); a listing pages
from the start, following ``nextCursor`` until a page has none, timing each page from request to
answer. The page size is the agent's own (``LIST_PAGE_SIZE``). A listing that yields any other
number of distinct sessions fails it. The figure is, for the full store and the baseline, the
median seconds per page and the adapter's CPU time per page (its own cost: the host's time is
part of every page, its CPU time is not counted), the pages and sessions per second of the full
listing, and the adapter's peak resident set (``VmHWM``) after ``initialize``, after the baseline
and after the full listing. The ratios, full / baseline, of the time per page, the CPU per page
and the peak memory should all be about 1.0: a page costs the same however large the store, and
the adapter's memory does not grow with it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Final

import anyio

from bench.peer import Peer, peak_rss_mib, run_seconds, spawn_peer
from bench.report import Figure, Measurement, Ratio, ratios_of
from bench.world import World, adapter_command
from muse_acp.agent.methods.listing import LIST_PAGE_SIZE
from muse_acp.rpc import JsonObject
from muse_acp.sim.serve.commands import DEFAULT_MODE
from muse_acp.sim.state.catalog import DEFAULT_MODEL
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.store import SessionMeta, Store

__all__ = ["measure"]

PAGE_TIMEOUT: Final = 60.0
"""Seconds one ``session/list`` page may take (the agent's own read budget is 20)."""
START_TIMEOUT: Final = 120.0
WRITE_TIMEOUT: Final = 300.0
BASELINE_LISTINGS: Final = 10
"""How many times the baseline is listed: its few pages alone are too short to time well (and
where the kernel does not report CPU time to the microsecond, it is counted in clock ticks)."""


def _populate(world: World, first: int, count: int) -> None:
    """Store sessions ``first`` .. ``first + count - 1``; session ``n`` was updated ``n``
    seconds before a fixed moment, so every one has its own place in the list order."""
    store = Store(world.sim_home)
    moment = datetime(2026, 9, 1, tzinfo=UTC)
    for n in range(first, first + count):
        stamp = (moment - timedelta(seconds=n)).strftime("%Y-%m-%dT%H:%M:%SZ")
        meta = SessionMeta(
            session_id=new_uuid7(),
            created_at=stamp,
            updated_at=stamp,
            workspace_root=str(world.workspace),
            provider_id="meta",
            model_id=DEFAULT_MODEL,
            approval_mode=DEFAULT_MODE,
            turn_count=1,
            first_user_prompt=f"stored session {n}",
        )
        lease = store.create(meta)
        if lease is None:
            raise RuntimeError(f"could not take the lease of new session {meta.session_id}")
        lease.release()


async def _write_sessions(world: World, first: int, count: int) -> None:
    with anyio.fail_after(WRITE_TIMEOUT):
        await anyio.to_thread.run_sync(
            partial(_populate, world, first, count), abandon_on_cancel=True
        )


@dataclass(frozen=True, slots=True)
class _Listing:
    pages: list[float]
    """Seconds each timed page took, in order."""
    cpu: float
    """CPU seconds the adapter spent on the timed pages."""

    @property
    def median(self) -> float:
        return statistics.median(self.pages)

    @property
    def cpu_per_page(self) -> float:
        return self.cpu / len(self.pages)


async def _list_once(peer: Peer, cwd: str, expected: int, pages: list[float]) -> None:
    """Page through every session of ``cwd`` until a page has no ``nextCursor``, appending
    each page's seconds to ``pages``."""
    seen: set[str] = set()
    rows = 0
    cursor: str | None = None
    for _ in range(expected + 2):
        params: JsonObject = {"cwd": cwd} if cursor is None else {"cwd": cwd, "cursor": cursor}
        started = time.perf_counter()
        page = await peer.request("session/list", params, wait=PAGE_TIMEOUT)
        pages.append(time.perf_counter() - started)
        if not isinstance(page, dict) or not isinstance(page.get("sessions"), list):
            raise RuntimeError(f"session/list answered {page!r:.200}")
        rows += len(page["sessions"])
        seen.update(row["sessionId"] for row in page["sessions"])
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    else:
        raise RuntimeError(f"session/list still had a next page after {expected + 2} pages")
    if rows != expected or len(seen) != expected:
        raise RuntimeError(
            f"session/list gave {rows} rows, {len(seen)} distinct, of {expected} stored sessions"
        )


async def _list_all(peer: Peer, world: World, expected: int, *, times: int = 1) -> _Listing:
    """``times`` listings of the whole workspace, after one untimed first page (so that the
    agent's catalog host is already running)."""
    cwd = str(world.workspace)
    await peer.request("session/list", {"cwd": cwd}, wait=PAGE_TIMEOUT)
    pages: list[float] = []
    cpu = run_seconds(peer.pid)
    for _ in range(times):
        await _list_once(peer, cwd, expected, pages)
    return _Listing(pages, run_seconds(peer.pid) - cpu)


async def measure(world: World, *, sessions: int = 10_000, baseline: int = 100) -> Figure:
    """Median seconds per page listing ``baseline``, then ``sessions``, stored sessions."""
    if not 0 < baseline < sessions:
        raise ValueError("the baseline must hold fewer sessions than the full store")
    await _write_sessions(world, 0, baseline)
    stderr = world.root / "session-list-adapter.stderr"
    async with spawn_peer(
        adapter_command(), env=world.env(), cwd=world.workspace, stderr=stderr
    ) as peer:
        init: JsonObject = {"protocolVersion": 1, "clientCapabilities": {}}
        await peer.request("initialize", init, wait=START_TIMEOUT)
        before = peak_rss_mib(peer.pid)
        small = await _list_all(peer, world, baseline, times=BASELINE_LISTINGS)
        after_small = peak_rss_mib(peer.pid)
        await _write_sessions(world, baseline, sessions - baseline)
        full = await _list_all(peer, world, sessions)
        after_full = peak_rss_mib(peer.pid)
    large, small_label = f"{sessions:,} sessions", f"{baseline:,} sessions"
    return Figure(
        key="session_list",
        title="session/list of a large store",
        measurements=(
            Measurement(f"{large}: time per page", full.median, "s"),
            Measurement(f"{large}: pages", len(full.pages), "pages"),
            Measurement(f"{large}: listed per second", sessions / sum(full.pages), "sessions/s"),
            Measurement(f"{large}: adapter CPU per page", full.cpu_per_page * 1e3, "ms"),
            Measurement(f"{small_label}: time per page", small.median, "s"),
            Measurement(f"{small_label}: adapter CPU per page", small.cpu_per_page * 1e3, "ms"),
            Measurement("adapter peak memory after initialize", before, "MiB"),
            Measurement(f"adapter peak memory after {small_label}", after_small, "MiB"),
            Measurement(f"adapter peak memory after {large}", after_full, "MiB"),
        ),
        ratios=(
            Ratio(
                f"time per page, {large} / {small_label}",
                full.median / small.median,
                higher_is_better=False,
            ),
            *ratios_of(
                f"adapter CPU per page, {large} / {small_label}",
                full.cpu_per_page,
                small.cpu_per_page,
                higher_is_better=False,
            ),
            Ratio(
                f"peak memory, after {large} / after {small_label}",
                after_full / after_small,
                higher_is_better=False,
            ),
        ),
        note=(
            f"ACP session/list through one muse-acp serve, {LIST_PAGE_SIZE} sessions a page, "
            f"following nextCursor to the end; medians over the pages (the {small_label} "
            f"listed {BASELINE_LISTINGS} times)"
        ),
    )
