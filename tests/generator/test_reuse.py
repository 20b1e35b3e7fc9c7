"""An ingested bundle imports its predecessor's unchanged models (and tables) instead of repeating
them: only definitions whose text is identical and whose references are all reused, so a
model that refers to a changed one is written again."""

from __future__ import annotations

import ast
import importlib
import textwrap

from codegen.reuse import reuse, reused_names
from muse_acp_wire.msp_bundles import BUNDLES
from muse_acp_wire.msp_outlines import OUTLINES

FIRST = textwrap.dedent(
    '''\
    """First."""

    from typing import Final

    from muse_acp_wire._base import WireModel


    class Leaf(WireModel):
        n: int


    class Holder(WireModel):
        leaf: Leaf


    class Quoted(WireModel):
        holder: "Holder | None" = None


    class Same(WireModel):
        text: str


    TABLE: Final = {"same": Same}
    VERSION: Final = "1"
    '''
)
SECOND = FIRST.replace("    n: int\n", "    n: int\n    m: int | None = None\n").replace(
    'VERSION: Final = "1"', 'VERSION: Final = "2"'
)
THIRD = SECOND.replace('VERSION: Final = "2"', 'VERSION: Final = "3"')


def _classes(source: str) -> list[str]:
    return [node.name for node in ast.parse(source).body if isinstance(node, ast.ClassDef)]


def test_a_model_is_reused_only_when_it_and_all_it_refers_to_are_unchanged() -> None:
    # Leaf changed; Holder's text did not but it holds a Leaf, and Quoted names Holder in a
    # quoted reference: both are written again. Same and the table that names it are reused.
    assert reused_names(FIRST, SECOND) == {"Same", "TABLE"}
    first, second, third = reuse([("m1", FIRST), ("m2", SECOND), ("m3", THIRD)])
    assert first == FIRST
    assert _classes(second) == ["Leaf", "Holder", "Quoted"]
    assert "from muse_acp_wire.m1 import (\n    Same as Same,\n    TABLE as TABLE,\n)" in second
    # Each reused name is imported from the module that defines it, not through a chain.
    assert _classes(third) == []
    assert "from muse_acp_wire.m1 import (\n    Same as Same,\n    TABLE as TABLE,\n)" in third
    assert "from muse_acp_wire.m2 import (\n    Holder as Holder," in third
    assert 'VERSION: Final = "3"' in third


def test_the_newest_bundle_shares_its_unchanged_models_and_declares_what_changed() -> None:
    newest, previous = list(BUNDLES)[-1], list(BUNDLES)[-2]
    new = importlib.import_module(BUNDLES[newest])
    old = importlib.import_module(BUNDLES[previous])
    # Unchanged since the previous ingested bundle: the very same class.
    assert new.TurnStartParams is old.TurnStartParams
    # Changed in the newest release (a member added): its own class, with the new member.
    assert new.SessionReadResult is not old.SessionReadResult
    assert "queued_inputs" in new.SessionReadResult.model_fields
    assert "queued_inputs" not in old.SessionReadResult.model_fields
    assert new.HOST_VERSION == newest != old.HOST_VERSION
    # The outline reads the same either way.
    assert dict(OUTLINES[newest].models["TurnStartParams"]) == {
        name: field.is_required() for name, field in new.TurnStartParams.model_fields.items()
    }
