"""How the performance harness reads a process's CPU time (``bench.peer``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.peer import cpu_seconds, run_seconds


def _kernel_reports_run_time() -> bool:
    sched = Path(f"/proc/self/task/{os.getpid()}/sched")
    return sched.exists() and "se.sum_exec_runtime" in sched.read_text()


def test_run_seconds_counts_a_few_milliseconds_of_work_finer_than_a_clock_tick() -> None:
    before = run_seconds(os.getpid())
    busy_until = time.thread_time() + 0.004
    while time.thread_time() < busy_until:
        pass
    used = run_seconds(os.getpid()) - before
    if _kernel_reports_run_time():
        assert 0.003 < used < 0.009  # clock ticks (10 ms) would read 0 or 0.01
    else:
        # The kernel keeps no run time per thread: the ticks are all there is.
        assert run_seconds(os.getpid()) == cpu_seconds(os.getpid())
