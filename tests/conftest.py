"""Shared pytest configuration for muse-acp's tests."""

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
