"""The public surface of ``muse_acp.rpc`` is exactly what its ``__all__`` lists."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

import muse_acp.rpc

MODULES = [
    "coalescing",
    "decoding",
    "dispatcher",
    "errors",
    "jsonvalue",
    "memory",
    "router",
    "splice",
    "stdio",
    "transport",
    "validation",
]


def public_names(module: ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    }


@pytest.mark.parametrize("name", MODULES)
def test_each_module_lists_exactly_the_names_it_defines(name: str) -> None:
    module = importlib.import_module(f"muse_acp.rpc.{name}")
    exported = set(module.__all__)
    assert len(exported) == len(module.__all__)
    assert all(hasattr(module, member) for member in exported)
    assert public_names(module) <= exported


def test_the_package_re_exports_what_other_parts_of_muse_acp_use() -> None:
    exported = set(muse_acp.rpc.__all__)
    # In-memory pipes (tests, trace replay) come from their own module: serving on stdio,
    # which imports this package before it answers initialize, never loads them.
    assert not exported & {"memory_stream_pair", "Endpoint", "FragmentingSendStream"}
    assert all(hasattr(muse_acp.rpc, member) for member in exported)
    assert {
        "Connection",
        "FrameReader",
        "FrameWriter",
        "RpcError",
        "ConnectionClosed",
        "Router",
        "RequestRoute",
        "NotificationRoute",
        "call",
        "open_stdio",
        "error_from_exception",
        "RawJson",
    } <= exported
