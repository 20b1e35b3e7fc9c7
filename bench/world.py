"""A throwaway world for one measurement: workspace, simulator state and the agent's data.

Contract: ``make_world(root)`` lays out the package's ``SimWorld`` under ``root`` (a workspace,
a ``muse-sim`` state directory, the adapter's data directory and a ``muse`` launcher running
the simulator of this very installation). ``World.env()`` is the environment for
``muse-acp serve`` or ``muse-sim`` processes living in it: the world's own (see
``muse_acp.sim.launcher``), with ``bench`` importable and errors-only logging. Bytecode caching
is always on for them, in ``pycache`` (under ``root`` unless given): an installed package has
its bytecode compiled, and a process that recompiled every module at each start would measure
the compiler, not muse-acp. Nothing outside ``root`` and ``pycache`` is written.
``remember_muse`` leaves what an earlier start of muse-acp remembers of the world's Muse, for a
figure that needs what ``initialize`` offers only once the Muse version is known.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from muse_acp.agent.handshake.startup import Startup
from muse_acp.config import load_config
from muse_acp.sim.launcher import SimWorld

__all__ = [
    "REPOSITORY_ROOT",
    "World",
    "adapter_command",
    "make_world",
    "python_module",
    "remember_muse",
]

REPOSITORY_ROOT: Final = Path(__file__).resolve().parent.parent
"""Where ``bench`` lives, put on ``PYTHONPATH`` so child processes can run its modules."""


@dataclass
class World(SimWorld):
    pycache: Path | None = None
    """Where child processes cache bytecode; None for ``root/pycache``."""

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = super().env(base)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        path = os.pathsep.join(p for p in (str(REPOSITORY_ROOT), env.get("PYTHONPATH")) if p)
        pycache = self.pycache or self.root / "pycache"
        env.update(PYTHONPATH=path, PYTHONPYCACHEPREFIX=str(pycache), MUSE_ACP_LOG="error")
        return env


def make_world(root: Path, pycache: Path | None = None) -> World:
    """Create a world under ``root`` (which must exist)."""
    world = World.make(root)
    world.pycache = pycache
    return world


async def remember_muse(world: World) -> None:
    """Probe the world's Muse and remember it, as muse-acp's first start there would have."""
    env = world.env()
    await Startup(load_config(env), env).settle()


def python_module(module: str, *args: str) -> list[str]:
    """The command running ``python -m module args`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def adapter_command() -> list[str]:
    """``muse-acp serve`` of this installation."""
    return python_module("muse_acp", "serve")
