"""Fixtures for running the client against a real ``muse-acp serve`` with ``muse-sim`` as host.

Each test gets its own scratch home: a ``muse-sim`` state directory, a muse-acp data
directory and a workspace, all under pytest's ``tmp_path``. The agent finds ``muse-sim``
through ``MUSE_ACP_MUSE_BIN``, pointing at the package's launcher that runs this interpreter's
``muse_acp.sim``, so the tests need no console script on PATH.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from muse_acp.sim.launcher import SimWorld


@dataclass(frozen=True, slots=True)
class LiveSetup:
    """Where one test's agent runs and what it is told."""

    workspace: str
    env: dict[str, str]
    version: str
    """The Muse host version ``muse-sim`` impersonates."""


def live_setup(tmp_path: Path, version: str) -> LiveSetup:
    world = SimWorld.make(tmp_path, version)
    env = {**world.settings(), "MUSE_ACP_LOG": "warning"}
    return LiveSetup(str(world.workspace), env, version)


@pytest.fixture
def live(tmp_path: Path) -> LiveSetup:
    """A scratch home whose host is ``muse-sim`` 1.2.1."""
    return live_setup(tmp_path, "1.2.1")


@pytest.fixture(params=["1.1.1", "1.2.1"])
def live_any_version(request: pytest.FixtureRequest, tmp_path: Path) -> LiveSetup:
    """A scratch home whose host is each simulated Muse version in turn."""
    version = request.param
    assert isinstance(version, str)
    return live_setup(tmp_path, version)
