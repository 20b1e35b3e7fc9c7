"""Fixtures for the agent wire tests: one isolated world per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import World, make_world


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


@pytest.fixture
def world_1_1_1(tmp_path: Path) -> World:
    return make_world(tmp_path, version="1.1.1")
