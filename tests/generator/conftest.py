"""The generator tests share one render cache per test run (``codegen.render_cache``): the
driver runs they make render each unchanged target once, not at every step nor once per
worker (with xdist every worker's temporary folder is in the run's, the cache beside them)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from codegen.render_cache import CACHE_ENV


@pytest.fixture(scope="session", autouse=True)
def render_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    before = os.environ.get(CACHE_ENV)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent / "codegen-cache"
    else:
        folder = tmp_path_factory.mktemp("codegen-cache")
    os.environ[CACHE_ENV] = str(folder)
    yield
    if before is None:
        del os.environ[CACHE_ENV]
    else:
        os.environ[CACHE_ENV] = before
