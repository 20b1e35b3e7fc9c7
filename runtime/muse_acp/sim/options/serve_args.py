"""The ``serve`` command's arguments.

Contract: ``add_serve_parser`` adds ``serve`` and every flag it takes to the command line; its
``--help`` lists them, which is how clients find out what the host can be started with.
``SANDBOX_NETWORK_MODES`` is what ``--sandbox-network`` accepts. Paths are kept as the strings
given: nothing here loads a wire model or ``pathlib``, so the ``serve --help`` probe a client runs
before every session stays fast.
"""

from __future__ import annotations

import argparse
from typing import Final

__all__ = ["SANDBOX_NETWORK_MODES", "add_serve_parser"]

SANDBOX_NETWORK_MODES: Final = ("proxy-only", "restricted", "enabled")
"""What ``--sandbox-network`` accepts; ``proxy-only`` is the default, as on real hosts."""


def add_serve_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``serve`` to the command line."""
    serve = commands.add_parser("serve", help="speak MSP (JSON-RPC over NDJSON) on stdio")
    serve.add_argument("--disable-write", action="store_true", help="refuse file writes")
    serve.add_argument("--disable-shell", action="store_true", help="refuse shell tools")
    serve.add_argument("--disable-sandbox", action="store_true", help="run tools unsandboxed")
    serve.add_argument(
        "--sandbox-network",
        metavar="MODE",
        choices=SANDBOX_NETWORK_MODES,
        default="proxy-only",
        help=f"network access of sandboxed tools ({', '.join(SANDBOX_NETWORK_MODES)})",
    )
    serve.add_argument("--no-session-log", action="store_true", help="keep sessions in memory only")
    serve.add_argument("--trust-workspace", action="store_true", help="trust the workspace")
    serve.add_argument("--replay", metavar="FILE", help="play back a recorded MSP transcript")
    serve.add_argument(
        "--pace",
        metavar="FACTOR",
        type=_pace,
        default=0.0,
        help="with --replay, wait the recorded intervals times FACTOR (each wait at most 5 s); "
        "0, the default, answers at once",
    )


def _pace(value: str) -> float:
    try:
        factor = float(value)
    except ValueError:
        factor = -1.0
    if not 0 <= factor < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a factor of 0 or more")
    return factor
