"""Fixtures for the agent wire tests: one isolated world per test, and every frame the test's
agents wrote validated when it ends."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from .frame_check import check_recorded
from .harness import World, make_world, recorded_frames


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


@pytest.fixture
def world_1_1_1(tmp_path: Path) -> World:
    return make_world(tmp_path, version="1.1.1")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Fail a test that passed when a frame its agents wrote does not validate (see
    ``frame_check``): checked here, once per test, so no test has to ask for it."""
    recorded_frames(clear=True)
    outcome = yield
    check_recorded()
    return outcome
