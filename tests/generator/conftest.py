"""The generator tests share one render cache per test session (``codegen.render_cache``): the
driver runs they make render each unchanged target once, not at every step."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from codegen.render_cache import CACHE_ENV


@pytest.fixture(scope="session", autouse=True)
def render_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("codegen-cache"))
    yield
    if before is None:
        del os.environ[CACHE_ENV]
    else:
        os.environ[CACHE_ENV] = before
