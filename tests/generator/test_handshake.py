"""The ACP module is split so that ``initialize`` is answered from a small module of its own,
while ``acp`` still names every model, each created once."""

from __future__ import annotations

import ast
import textwrap

import pytest

import muse_acp_wire.acp as acp
import muse_acp_wire.acp_handshake as acp_handshake
from codegen.config import HANDSHAKE_ROOTS
from codegen.handshake import split

SOURCE = textwrap.dedent(
    '''\
    """A module."""

    from typing import Final, TypeAlias

    from muse_acp_wire._base import WireModel


    class Leaf(WireModel):
        text: str
        "Other"


    class Root(WireModel):
        leaf: Leaf
        later: "Later | None" = None


    class Other(WireModel):
        root: Root


    class Later(WireModel):
        n: int


    Either: TypeAlias = Root | Other
    TABLE: Final = {"root": Root}
    '''
)


def _defined(source: str) -> list[str]:
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


def test_a_root_takes_what_it_refers_to_quoted_or_not_and_nothing_else() -> None:
    # Leaf's field docstring "Other" is text, not a reference: Other stays.
    whole, first = split(SOURCE, ["Root"])
    assert _defined(first) == ["Leaf", "Root", "Later"]
    assert _defined(whole) == ["Other", "Either", "TABLE"]
    assert "from muse_acp_wire.acp_handshake import (\n    Leaf as Leaf," in whole
    assert whole.startswith('"""A module.')
    compile(whole, "acp.py", "exec")
    compile(first, "acp_handshake.py", "exec")


def test_a_root_that_is_not_a_model_is_refused() -> None:
    with pytest.raises(ValueError, match="Nowhere, TABLE"):
        split(SOURCE, ["Root", "TABLE", "Nowhere"])


def test_the_generated_handshake_module_holds_the_roots_and_acp_names_each_model_once() -> None:
    here = acp_handshake.__name__
    models = [
        name
        for name, value in vars(acp_handshake).items()
        if isinstance(value, type) and value.__module__ == here
    ]
    assert set(HANDSHAKE_ROOTS) - {"MuseBackend"} <= set(models)
    assert all(getattr(acp, name) is getattr(acp_handshake, name) for name in models)
    assert acp.MuseBackend == acp_handshake.MuseBackend
    # Only what initialize reads and writes: a session's MCP servers and a prompt's file-change
    # report are created after the answer.
    later = {"McpServerStdio", "SessionInfoUpdateSessionUpdate", "JetbrainsFileChangesReported"}
    assert not later & set(models)
    # Most of ACP stays behind: the answer to initialize creates about a third of its classes.
    everything = [
        name
        for name, value in vars(acp).items()
        if isinstance(value, type) and value.__module__.startswith("muse_acp_wire.acp")
    ]
    assert len(models) < len(everything) / 2
