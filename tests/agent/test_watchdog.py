"""The silence watch: a host that says nothing fails the turn; the user's time never counts."""

from __future__ import annotations

import logging

import anyio
import pytest

from muse_acp.agent.turns.watchdog import SilenceWatch

pytestmark = pytest.mark.anyio

BUDGET = 0.05
WAIT = 10.0


async def test_a_silent_host_is_reported_once_after_the_budget() -> None:
    silences: list[str] = []
    watch = SilenceWatch(BUDGET, lambda: False)
    with anyio.fail_after(WAIT):
        await watch.watch(lambda: silences.append("silent"))
    assert silences == ["silent"]


async def test_time_spent_waiting_on_the_client_is_not_silence() -> None:
    asked_at: list[float] = []

    def waiting() -> bool:
        asked_at.append(anyio.current_time())
        return len(asked_at) < 3  # the client answers during the third window

    fired_at: list[float] = []
    with anyio.fail_after(WAIT):
        await SilenceWatch(BUDGET, waiting).watch(lambda: fired_at.append(anyio.current_time()))
    assert len(fired_at) == 1
    # The answer may have come just before the third look: the host still gets a whole budget
    # from that look to say something.
    assert len(asked_at) == 4
    assert fired_at[0] - asked_at[2] >= BUDGET


async def test_an_event_starts_the_count_again() -> None:
    watch = SilenceWatch(BUDGET * 4, lambda: False)
    heard_at: list[float] = []
    fired_at: list[float] = []

    async def host_speaks() -> None:
        await anyio.sleep(BUDGET * 2)  # halfway through the first window
        heard_at.append(anyio.current_time())
        watch.heard()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(host_speaks)
            await watch.watch(lambda: fired_at.append(anyio.current_time()))
    # Silence is counted from the last event, not from the start of the watch.
    assert fired_at[0] - heard_at[0] >= BUDGET * 4


async def test_a_write_waiting_on_the_client_is_not_silence_and_a_long_one_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watch = SilenceWatch(BUDGET, lambda: False, "s-1")
    reads_again = anyio.Event()
    read_at: list[float] = []
    fired_at: list[float] = []

    async def client_reads_later() -> None:
        await anyio.sleep(BUDGET * 4)  # the client reads nothing for four budgets
        read_at.append(anyio.current_time())
        reads_again.set()

    caplog.set_level(logging.WARNING, logger="muse_acp.agent")
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch.client_write, reads_again.wait())
            tasks.start_soon(client_reads_later)
            await watch.watch(lambda: fired_at.append(anyio.current_time()))
    # Only once the write went out does the host's count start: a whole budget from then.
    assert len(fired_at) == 1
    assert fired_at[0] - read_at[0] >= BUDGET
    stopped, resumed = (r.getMessage() for r in caplog.records)
    assert "session s-1: the client has not read" in stopped
    assert "stopped reading" in stopped
    assert "session s-1: the client reads again" in resumed


async def test_after_a_write_that_waited_on_the_client_the_host_gets_one_budget_not_two() -> None:
    # The write restarts the count when it ends, so the first look a budget later must catch a
    # silent host; an extra look would let Muse stay silent for a second budget.
    looks_after_the_write = 0
    written: list[float] = []

    def waiting_on_client() -> bool:  # asked at every look that finds a budget gone by
        nonlocal looks_after_the_write
        looks_after_the_write += bool(written)
        return False

    watch = SilenceWatch(BUDGET, waiting_on_client)
    reads_again = anyio.Event()

    async def write() -> None:
        await reads_again.wait()
        written.append(anyio.current_time())  # the watch hears of the end with no yield between

    async def client_reads_later() -> None:
        await anyio.sleep(BUDGET * 3)  # the client reads nothing for three budgets
        reads_again.set()

    fired_at: list[float] = []
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch.client_write, write())
            tasks.start_soon(client_reads_later)
            await watch.watch(lambda: fired_at.append(anyio.current_time()))
    assert len(fired_at) == 1
    assert fired_at[0] - written[0] >= BUDGET
    assert looks_after_the_write == 1, "the silence is caught at the first look after it"


async def test_a_stopped_watch_returns_at_once_and_never_reports() -> None:
    # A settled turn stops its watch: it returns by itself, before the turn's leftover tasks
    # are cancelled, instead of being cancelled with them.
    silences: list[str] = []
    watch = SilenceWatch(WAIT * 10, lambda: False)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch.watch, lambda: silences.append("silent"))
            await anyio.wait_all_tasks_blocked()
            watch.stop()
    assert silences == []
    with anyio.fail_after(WAIT):
        await watch.watch(lambda: silences.append("silent"))  # already stopped: returns
    assert silences == []
