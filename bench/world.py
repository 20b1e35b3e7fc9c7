"""A throwaway world for one measurement: workspace, simulator state and the agent's data.

Contract: ``make_world(root)`` lays out a workspace directory, a ``muse-sim`` state directory,
the adapter's data directory and a ``muse`` executable that runs the simulator of this very
installation, all under ``root``. ``World.env()`` is the environment for ``muse-acp serve`` or
``muse-sim`` processes living in it: this process's environment without any ``MUSE_*`` or
``META_API_KEY`` setting, plus the world's own. Bytecode caching is always on for them, in
``pycache`` (under ``root`` unless given): an installed package has its bytecode compiled, and
a process that recompiled every module at each start would measure the compiler, not muse-acp.
Nothing outside ``root`` and ``pycache`` is written.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["REPOSITORY_ROOT", "World", "adapter_command", "make_world", "python_module"]

REPOSITORY_ROOT: Final = Path(__file__).resolve().parent.parent
"""Where ``bench`` lives, put on ``PYTHONPATH`` so child processes can run its modules."""


@dataclass(frozen=True, slots=True)
class World:
    root: Path
    workspace: Path
    sim_home: Path
    data_dir: Path
    muse_bin: Path
    pycache: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("MUSE_", "META_API_KEY", "PYTHONDONTWRITEBYTECODE"))
        }
        path = os.pathsep.join(p for p in (str(REPOSITORY_ROOT), env.get("PYTHONPATH")) if p)
        env.update(
            PYTHONPATH=path,
            PYTHONPYCACHEPREFIX=str(self.pycache),
            MUSE_ACP_MUSE_BIN=str(self.muse_bin),
            MUSE_ACP_DATA_DIR=str(self.data_dir),
            MUSE_ACP_LOG="error",
            MUSE_SIM_HOME=str(self.sim_home),
            MUSE_SIM_VERSION="1.2.1",
        )
        env.update(extra)
        return env


def make_world(root: Path, pycache: Path | None = None) -> World:
    """Create a world under ``root`` (which must exist)."""
    workspace = root / "workspace"
    workspace.mkdir()
    muse_bin = root / "muse"
    muse_bin.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m muse_acp.sim "$@"\n')
    muse_bin.chmod(muse_bin.stat().st_mode | stat.S_IXUSR)
    return World(
        root=root,
        workspace=workspace,
        sim_home=root / "sim-home",
        data_dir=root / "acp-data",
        muse_bin=muse_bin,
        pycache=pycache or root / "pycache",
    )


def python_module(module: str, *args: str) -> list[str]:
    """The command running ``python -m module args`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def adapter_command() -> list[str]:
    """``muse-acp serve`` of this installation."""
    return python_module("muse_acp", "serve")
