"""Which event loop ``serve`` asks anyio for."""

from __future__ import annotations

import sys

import anyio
import pytest

from muse_acp.event_loop import backend_options, loop_name


def test_asyncio_asks_for_the_standard_library_loop() -> None:
    assert backend_options("asyncio") == {}


def test_auto_asks_for_uvloop_where_it_is_installed() -> None:
    pytest.importorskip("uvloop", reason="uvloop is a dependency only where it is built")
    options = backend_options("auto")
    assert options == {"use_uvloop": True}
    assert anyio.run(_running_loop, backend_options=options) == "uvloop"


def test_auto_falls_back_to_asyncio_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # what an import of a missing module meets
    options = backend_options("auto")
    assert options == {}
    assert anyio.run(_running_loop, backend_options=options) == "asyncio"


async def _running_loop() -> str:
    return loop_name()
