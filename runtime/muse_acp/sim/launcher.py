"""``muse-sim`` standing in for the Muse executable: launchers and scratch worlds.

Contract: ``write_launcher(path, version=...)`` writes an executable shell script at ``path``
that runs this very installation's simulator (``python -m muse_acp.sim`` with the running
interpreter), with the host version and other simulator settings fixed in the script, and
returns ``path``. ``sim_command`` is the quoted command line such scripts ``exec``.
``sim_launcher`` prefers the ``muse-sim`` console script installed beside the interpreter.

``SimWorld.make(root, version)`` lays out a scratch world under ``root``: a workspace, the
simulator's state directory (signed in as after ``muse login``, unless ``signed_in`` is False),
the adapter's data directory and a ``muse`` launcher. ``settings`` are the variables that point
``muse-acp serve`` and ``muse-sim`` at them; ``env`` lays them over an environment cleared of
every ``MUSE_*`` and ``META_API_KEY`` setting. The demo, the benchmarks and the tests all run
their agents and hosts in such worlds.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Self

from muse_acp.sim.options.accounts import login
from muse_acp.sim.options.faults import FAULTS_ENV
from muse_acp.sim.options.settings import HOME_ENV
from muse_acp.sim.options.versions import VERSION_ENV

__all__ = [
    "DEFAULT_VERSION",
    "SimWorld",
    "launcher_text",
    "sim_command",
    "sim_launcher",
    "write_launcher",
]

DEFAULT_VERSION: Final = "1.2.1"
"""The host version a world plays unless told otherwise."""
_CLEARED: Final = ("MUSE_", "META_API_KEY")
"""Settings of the caller's own Muse and adapter, never passed into a world."""


def sim_command() -> str:
    """The shell words running this installation's ``muse-sim``: ``python -m muse_acp.sim``."""
    return f"{shlex.quote(sys.executable)} -m muse_acp.sim"


def write_launcher(
    path: Path,
    *,
    version: str | None = None,
    home: Path | None = None,
    faults: str | None = None,
    prelude: str = "",
) -> Path:
    """Write an executable script at ``path`` that runs ``muse-sim`` with its arguments.

    ``version``, ``home`` and ``faults`` fix ``MUSE_SIM_VERSION``, ``MUSE_SIM_HOME`` and
    ``MUSE_SIM_FAULTS`` for every process it starts (None leaves each to the environment);
    ``prelude`` is shell run first (it must not ``exec``). Returns ``path``.
    """
    text = launcher_text(version=version, home=home, faults=faults, prelude=prelude)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path


def launcher_text(
    *,
    version: str | None = None,
    home: Path | None = None,
    faults: str | None = None,
    prelude: str = "",
) -> str:
    """The script ``write_launcher`` writes with these arguments."""
    fixed = {
        VERSION_ENV: version,
        HOME_ENV: None if home is None else str(home),
        FAULTS_ENV: faults,
    }
    assignments = "".join(
        f"{name}={shlex.quote(value)} " for name, value in fixed.items() if value is not None
    )
    lines = ["#!/bin/sh", *([prelude.rstrip("\n")] if prelude else [])]
    lines.append(f'{assignments}exec {sim_command()} "$@"')
    return "\n".join(lines) + "\n"


def sim_launcher(directory: Path) -> Path:
    """The ``muse-sim`` console script of this installation, else a launcher in ``directory``."""
    script = Path(sys.executable).with_name("muse-sim")
    if script.is_file() and os.access(script, os.X_OK):
        return script
    return write_launcher(directory / "muse-sim")


@dataclass
class SimWorld:
    """A scratch world whose Muse is ``muse-sim`` (see the module contract)."""

    root: Path
    workspace: Path
    sim_home: Path
    data_dir: Path
    muse_bin: Path
    version: str = DEFAULT_VERSION

    @classmethod
    def make(
        cls,
        root: Path,
        version: str = DEFAULT_VERSION,
        *,
        muse_bin: Path | None = None,
        signed_in: bool = True,
    ) -> Self:
        """Lay out a world under ``root`` (which must exist); ``muse_bin`` defaults to a new
        launcher, ``root/muse``; ``signed_in`` False leaves Muse without a credential."""
        workspace = root / "workspace"
        workspace.mkdir()
        if signed_in:
            login(root / "sim-home")
        return cls(
            root=root,
            workspace=workspace,
            sim_home=root / "sim-home",
            data_dir=root / "acp-data",
            muse_bin=muse_bin or write_launcher(root / "muse"),
            version=version,
        )

    def settings(self) -> dict[str, str]:
        """The variables that put ``muse-acp serve`` and ``muse-sim`` in this world."""
        return {
            "MUSE_ACP_MUSE_BIN": str(self.muse_bin),
            "MUSE_ACP_DATA_DIR": str(self.data_dir),
            HOME_ENV: str(self.sim_home),
            VERSION_ENV: self.version,
        }

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (this process's environment by default) cleared of any Muse or adapter
        setting, with ``settings`` laid over it."""
        source = os.environ if base is None else base
        env = {key: value for key, value in source.items() if not key.startswith(_CLEARED)}
        env.update(self.settings())
        return env
