"""Fixtures for the agent wire tests: one isolated world per test, and every frame the test's
agents wrote validated when it ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from .frame_check import pytest_runtest_call  # noqa: F401  (the check, as this folder's hook)
from .harness import World, make_world


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


@pytest.fixture
def world_1_1_1(tmp_path: Path) -> World:
    return make_world(tmp_path, version="1.1.1")
