"""``python -m bench [--out PATH] [--only FIGURE ...] [--smoke]``: run the figures, print one table.

Every figure runs in its own throwaway world under a temporary directory, one after the other
(they would otherwise compete for the same cores); the measured processes share one bytecode
cache there, so only the first start of each compiles anything. The table goes to stdout,
progress to stderr, and the same numbers as JSON to ``--out`` (default ``bench-results.json``).
``--smoke`` runs every figure's code path at a tiny size, in seconds: its numbers only show that
the harness works.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Final

import anyio

from bench import (
    cold_start,
    first_update,
    growth,
    idle,
    many_sessions,
    relay,
    runtime_throughput,
    session_list,
    session_load,
    stored_output,
    traced_relay,
)
from bench.report import Figure, render_table, write_json
from bench.world import World, make_world

Measure = Callable[[World], Awaitable[Figure]]


@dataclass(frozen=True, slots=True)
class Plan:
    """How to measure one figure: at full size, and at the smoke size."""

    full: Measure
    smoke: Measure


FIGURES: Final[Mapping[str, Plan]] = MappingProxyType(
    {
        "runtime_throughput": Plan(
            runtime_throughput.measure,
            partial(runtime_throughput.measure, updates=50, rounds=1),
        ),
        "relay": Plan(relay.measure, partial(relay.measure, deltas=50, rounds=1)),
        "traced_relay": Plan(
            traced_relay.measure, partial(traced_relay.measure, deltas=50, rounds=1)
        ),
        "stored_output": Plan(
            stored_output.measure,
            partial(stored_output.measure, size_mib=0.25, page_mib=0.125, rounds=1),
        ),
        "first_update": Plan(first_update.measure, partial(first_update.measure, rounds=2, cold=1)),
        "cold_start": Plan(cold_start.measure, partial(cold_start.measure, runs=1)),
        "growth": Plan(growth.measure, partial(growth.measure, sizes_mib=(0.5,), repeats=1)),
        "session_list": Plan(
            session_list.measure, partial(session_list.measure, sessions=120, baseline=60)
        ),
        "session_load": Plan(
            session_load.measure, partial(session_load.measure, sizes=(40, 80), rounds=1)
        ),
        "idle": Plan(idle.measure, partial(idle.measure, sessions=1, window=0.5, settle=0.2)),
        "many_sessions": Plan(
            many_sessions.measure,
            partial(many_sessions.measure, sessions=3, deltas=20, rounds=1),
        ),
    }
)
"""Every figure by key, in the order a run measures them."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("bench-results.json"),
        help="where to write the figures as JSON (default: bench-results.json)",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes: check the harness, not the figures"
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(FIGURES),
        help="measure only this figure (repeatable)",
    )
    return parser


async def run(keys: Sequence[str], *, smoke: bool = False) -> list[Figure]:
    """Measure the figures ``keys`` one after the other."""
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="muse-acp-bench-") as scratch:
        pycache = Path(scratch) / "pycache"
        for key in keys:
            print(f"measuring {key} ...", file=sys.stderr, flush=True)
            root = Path(scratch) / key
            root.mkdir()
            started = time.perf_counter()
            plan = FIGURES[key]
            measure = plan.smoke if smoke else plan.full
            figures.append(await measure(make_world(root, pycache)))
            print(f"  done in {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    keys = [key for key in FIGURES if not options.only or key in options.only]
    figures = anyio.run(partial(run, keys, smoke=options.smoke))
    print(render_table(figures))
    write_json(figures, options.out)
    print(f"\nwritten to {options.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
