"""The ``exec`` command's arguments and the simulated releases that have ``exec`` only.

Contract: ``add_exec_parser`` adds ``exec`` and every flag it takes to the command line, and
``legacy_version`` says which simulated release without ``serve`` ``MUSE_SIM_VERSION`` names.
Nothing here loads a wire model, so ``--version`` and ``--help`` probes stay fast; running a
prompt is ``exec.run_exec``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from muse_acp.sim.options.versions import VERSION_ENV, HostVersion

__all__ = ["LEGACY_VERSIONS", "add_exec_parser", "legacy_version"]

LEGACY_VERSIONS: Final[Mapping[str, HostVersion]] = MappingProxyType(
    {"0.2.1": HostVersion("0.2.1", "R1433.1")}
)
"""Simulated releases with ``exec --json`` and no ``serve`` (their builds are made up)."""


def legacy_version(env: Mapping[str, str]) -> HostVersion | None:
    """The simulated release without ``serve`` that ``MUSE_SIM_VERSION`` names, if it names one."""
    return LEGACY_VERSIONS.get(env.get(VERSION_ENV, "").strip())


def add_exec_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``exec`` to the command line (its ``--help`` lists every flag it takes)."""
    parser = commands.add_parser("exec", help="run one prompt headless and exit")
    parser.add_argument("--json", action="store_true", help="write records as JSON Lines")
    parser.add_argument(
        "--image", metavar="PATH", action="append", default=[], help="attach an image file"
    )
    parser.add_argument("--disable-write", action="store_true", help="refuse file writes")
    parser.add_argument("--disable-shell", action="store_true", help="refuse shell tools")
    parser.add_argument(
        "--disable-approval", action="store_true", help="act without asking for approval"
    )
    parser.add_argument("--model", metavar="MODEL", help="the model to run on")
    parser.add_argument("--reasoning-effort", metavar="EFFORT", help="the reasoning effort")
    parser.add_argument("prompt", help="what to do")
