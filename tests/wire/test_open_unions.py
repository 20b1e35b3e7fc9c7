"""An open union (an MSP view item: models told apart by ``kind``, then ``UnknownItem`` for any
other kind) parses every value as trying its models in turn does, though it tries only the
model its ``kind`` names before the catch-all (``codegen.postpass``).

The reference is the union as the generator writes it (``union_mode="left_to_right"`` over the
same models, each tried in turn); both must make the same model of the same values, or both
refuse, for every golden item, for items their own model refuses, and for kinds no model has.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Annotated, Any, Final, Union, get_args

import pytest
from pydantic import Field, TypeAdapter, ValidationError

from codegen.postpass import rewrite
from muse_acp_wire import msp_1_1_1 as v111, msp_1_2_1 as v121, msp_vocabulary as voc

GOLDEN: Final = Path(__file__).resolve().parents[1] / "golden" / "msp"
AGENT: Final[dict[str, Any]] = json.loads(
    (GOLDEN / "valid" / "item_agent_message.json").read_text()
)

ITEMS: Final[list[Any]] = [
    *(json.loads(path.read_text()) for path in sorted((GOLDEN / "valid").glob("item_*.json"))),
    json.loads((GOLDEN / "invalid" / "item_tool_call_args_as_object.json").read_text()),
    {key: value for key, value in AGENT.items() if key != "text"},  # its own model refuses it
    {**AGENT, "revision": 0},
    {**AGENT, "kind": "hologram"},
    {**AGENT, "kind": 7},
    {key: value for key, value in AGENT.items() if key != "kind"},
    {**AGENT, "kind": "hologram", "itemId": None},
    "not an item",
]
"""Every golden item, and items each way wrong."""


def _models(annotation: Any) -> list[Any]:
    """The models of a union, whatever unions and ``Annotated`` they sit in, in order."""
    args = get_args(annotation)
    if not args:
        return [annotation]
    if isinstance(args[-1], type) or get_args(args[-1]) or args[-1] is None:
        return [model for arg in args for model in _models(arg)]
    return _models(args[0])  # Annotated[X, metadata...]


@pytest.mark.parametrize("module", [voc, v111, v121], ids=lambda module: module.__name__)
def test_an_item_parses_as_its_kinds_model_or_the_catch_all_as_trying_each_in_turn_did(
    module: types.ModuleType,
) -> None:
    models = _models(module.ItemEventParams.model_fields["item"].annotation)
    assert len(models) == 9
    assert models[-1] is module.UnknownItem
    in_turn: TypeAdapter[Any] = TypeAdapter(
        Annotated[Union[tuple(models)], Field(union_mode="left_to_right")]  # type: ignore[arg-type]  # noqa: UP007
    )
    envelope = {"sessionId": "s", "viewCursor": "v:s:1"}
    outcomes = set()
    for item in ITEMS:
        try:
            expected = in_turn.validate_python(item, by_alias=True, by_name=False)
        except ValidationError:
            expected = None
        try:
            params = module.ItemEventParams.__pydantic_validator__.validate_python(
                {**envelope, "item": item}, by_alias=True, by_name=False
            )
            got = params.item
        except ValidationError:
            got = None
        assert type(got) is type(expected), item
        if expected is not None:
            assert got.model_dump(by_alias=True) == expected.model_dump(by_alias=True), item
        known = isinstance(item, dict) and item.get("kind") in {"agentMessage", "toolCall"}
        outcomes.add((known, None if got is None else type(got) is module.UnknownItem))
    # Each way was met: a kind's own model, the catch-all for a kind its model refused and for
    # an unknown kind, and a refusal.
    assert outcomes >= {(True, False), (True, True), (False, True), (True, None), (False, None)}


GENERATOR_OUTPUT: Final = """
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from muse_acp_wire._base import WireModel


class Circle(WireModel):
    shape: Literal["circle"]
    radius: int


class Square(WireModel):
    shape: Literal["square", "box"]
    side: int


class OtherShape(WireModel):
    shape: str


class Drawing(WireModel):
    open: Annotated[Circle | Square | OtherShape, Field(union_mode="left_to_right")]
    closed: Annotated[Circle | Square, Field(union_mode="left_to_right")]
    shared: Annotated[Circle | Circle | OtherShape, Field(union_mode="left_to_right")]
    smart: Circle | Square | OtherShape


class CodegenRoot(WireModel):
    drawing: Drawing | None = None
"""


def test_the_post_pass_tags_only_a_union_of_models_told_apart_ahead_of_a_catch_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = rewrite(
        GENERATOR_OUTPUT,
        class_names=frozenset({"Circle", "Square", "OtherShape", "Drawing", "CodegenRoot"}),
        docstring="A test module.",
        tables_source="",
        tag_open_unions=True,
    )
    tagged = "Annotated[Circle | Square, Field(discriminator='shape')] | OtherShape"
    assert f"open: Annotated[{tagged}, Field(union_mode='left_to_right')]" in source
    # No catch-all, or a value two models share: left as the generator wrote them.
    assert "closed: Annotated[Circle | Square, Field(union_mode='left_to_right')]" in source
    assert "shared: Annotated[Circle | Circle | OtherShape, Field(" in source
    assert "smart: Circle | Square | OtherShape" in source
    module = types.ModuleType("generated_open_unions")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, module.__name__, "exec"), vars(module))
    drawing = vars(module)["Drawing"]
    base = {"closed": {"shape": "circle", "radius": 1}, "shared": {"shape": "x"}, "smart": {}}
    for shape, expected in [
        ({"shape": "box", "side": 2}, "Square"),
        ({"shape": "circle", "radius": 1}, "Circle"),
        ({"shape": "circle"}, "OtherShape"),  # its own model refuses it
        ({"shape": "star"}, "OtherShape"),
    ]:
        made = drawing.model_validate({**base, "open": shape, "smart": shape})
        assert type(made.open).__name__ == expected
    with pytest.raises(ValidationError):
        drawing.model_validate({**base, "open": {"radius": 1}})
