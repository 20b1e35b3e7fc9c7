"""Fixtures of the robustness suites: one long-lived agent per test module.

Spawning ``muse-acp serve`` costs far more than an example, so each module shares one agent
(``agent``) in one isolated world (``world``) across all its tests and hypothesis examples. That
needs one event loop for the whole module, hence ``anyio_backend`` is module-scoped here. Every
frame an agent writes is checked when each test ends, as in the wire tests (``frame_check``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.agent_wire.frame_check import pytest_runtest_call  # noqa: F401  (frames checked)
from tests.agent_wire.harness import World, make_world

from .faults_harness import FaultWorld, fault_world
from .rawagent import RawAgent, raw_agent


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("robust"))


@pytest.fixture(scope="module")
async def agent(world: World) -> AsyncIterator[RawAgent]:
    """An initialized agent (both Muse extensions negotiated) that must outlive the module."""
    async with raw_agent(world) as running:
        await running.initialize()
        yield running
        assert running.alive, f"the agent exited; stderr tail:\n{world.stderr_text()[-3000:]}"


@pytest.fixture
def faulty(tmp_path: Path) -> FaultWorld:
    """A fault world of this test alone, in process, with the default budgets."""
    return fault_world(tmp_path)
