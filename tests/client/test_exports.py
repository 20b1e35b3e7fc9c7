"""The public surface of ``muse_acp.client`` is exactly what its ``__all__`` lists."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

import muse_acp.client

MODULES = [
    "capabilities",
    "connect",
    "connection",
    "errors",
    "output",
    "policies",
    "process",
    "session",
    "updates",
]


def defined_here(module: ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    }


@pytest.mark.parametrize("name", MODULES)
def test_each_module_exports_what_it_defines_and_nothing_missing(name: str) -> None:
    module = importlib.import_module(f"muse_acp.client.{name}")
    exported = list(module.__all__)
    assert len(set(exported)) == len(exported)
    assert all(hasattr(module, member) for member in exported)
    assert defined_here(module) <= set(exported)


def test_the_package_exports_only_names_that_exist_and_every_class_it_defines() -> None:
    exported = set(muse_acp.client.__all__)
    assert len(exported) == len(muse_acp.client.__all__)
    assert all(hasattr(muse_acp.client, member) for member in exported)
    for name in MODULES:
        module = importlib.import_module(f"muse_acp.client.{name}")
        classes = {member for member in defined_here(module) if member[0].isupper()}
        internal = {"UpdateEnvelope"}
        assert classes - internal <= exported, name
