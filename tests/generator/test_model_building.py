"""Generated models cost little to import and every one of them still builds and validates.

Importing a generated module creates its classes but builds no validator (pydantic's
``defer_build``; defaults of model type are made by factories, not at import), so a process pays
only for the models it uses. These tests hold that promise and check that deferring hides no
broken model: each builds, and each model without required members validates and round-trips.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import subprocess
import sys
import textwrap
import types
from typing import get_args

import pytest
from pydantic import BaseModel, ValidationError

from codegen.postpass import rewrite
from muse_acp_wire._base import WireModel
from muse_acp_wire.msp_bundles import BUNDLES
from muse_acp_wire.msp_outlines import OUTLINES

MODEL_MODULES = (
    "muse_acp_wire.acp",
    "muse_acp_wire.acp_handshake",
    "muse_acp_wire.exec_jsonl",
    "muse_acp_wire.msp_1_1_1",
    "muse_acp_wire.msp_1_2_1",
    "muse_acp_wire.msp_1_3_0",
    "muse_acp_wire.msp_vocabulary",
)


def _both_bundles(first: str, second: str) -> bool:
    return all(name.startswith("muse_acp_wire.msp_1_") for name in (first, second))


def _models(module_name: str) -> list[type[BaseModel]]:
    """Every model a generated module defines (wire models and the few root models)."""
    module = importlib.import_module(module_name)
    return [
        value
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseModel)
        # A bundle's own models, and those it takes from its predecessor (``codegen.reuse``).
        and (value.__module__ == module_name or _both_bundles(value.__module__, module_name))
        and value.__name__ == name
        and "[" not in name  # pydantic files its parametrized bases (RootModel[X]) here too
    ]


def test_importing_every_generated_module_builds_no_validator() -> None:
    probe = textwrap.dedent(
        f"""
        import importlib, inspect, json
        from pydantic import BaseModel
        built = []
        for name in {MODEL_MODULES!r}:
            module = importlib.import_module(name)
            for value in vars(module).values():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseModel)
                    and value.__module__ == name
                    and "[" not in value.__name__
                    and value.__pydantic_complete__
                ):
                    built.append(value.__qualname__)
        print(json.dumps(built))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(completed.stdout) == []


@pytest.mark.parametrize("module_name", MODEL_MODULES)
def test_every_model_builds_and_every_model_without_required_members_round_trips(
    module_name: str,
) -> None:
    models = _models(module_name)
    assert len(models) > 10
    for model in models:
        model.model_rebuild(force=True)
        assert model.__pydantic_complete__, model.__qualname__
        if any(field.is_required() for field in model.model_fields.values()):
            continue
        made = model.model_validate({})
        wire = made.model_dump_json(by_alias=True)
        assert model.model_validate_json(wire) == made, model.__qualname__


def test_a_model_default_is_made_fresh_for_each_instance() -> None:
    from muse_acp_wire import acp

    first, second = acp.ClientCapabilities(), acp.ClientCapabilities()
    assert first.fs == acp.FileSystemCapabilities.model_validate({})
    assert first.fs is not second.fs


GENERATOR_OUTPUT = """
from __future__ import annotations

from typing import Annotated

from pydantic import Field

from muse_acp_wire._base import WireModel


class Leaf(WireModel):
    size: int = 0


class Tree(WireModel):
    children: list[Tree] | None = None
    leaf: Annotated[Leaf | None, Field(validate_default=True)] = {}


class CodegenRoot(WireModel):
    tree: Tree | None = None
"""


def test_the_post_pass_quotes_only_forward_references_and_defers_model_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = rewrite(
        GENERATOR_OUTPUT,
        class_names=frozenset({"Leaf", "Tree", "CodegenRoot"}),
        docstring="A test module.",
        tables_source="",
    )
    assert "__future__" not in source
    assert "children: 'list[Tree] | None' = None" in source
    assert "leaf: Annotated[Leaf | None" in source
    assert "default_factory=lambda: Leaf.model_validate({})" in source
    # A real module, as pydantic resolves quoted annotations in the model's own module.
    module = types.ModuleType("generated_test_module")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, module.__name__, "exec"), vars(module))
    tree_model = vars(module)["Tree"]
    assert isinstance(tree_model, type)
    assert issubclass(tree_model, WireModel)
    tree = tree_model.model_validate({"children": [{"children": []}]})
    assert tree.model_dump(exclude_unset=True) == {"children": [{"children": []}]}
    with pytest.raises(ValidationError):
        tree_model.model_validate({"children": [{"leaf": {"size": "big"}}]})


@pytest.mark.parametrize("version", sorted(OUTLINES))
def test_each_bundle_outline_says_exactly_what_its_models_and_tables_declare(
    version: str,
) -> None:
    outline = OUTLINES[version]
    module = importlib.import_module(BUNDLES[version])
    assert outline.fingerprint == module.SCHEMA_FINGERPRINT
    assert outline.host_requests == {
        method: spec.command for method, spec in module.HOST_REQUESTS.items()
    }
    assert outline.client_requests == set(module.CLIENT_REQUESTS)
    assert outline.client_notifications == set(module.CLIENT_NOTIFICATIONS)
    assert outline.errors == module.ERRORS
    assert outline.models == {
        model.__name__: {name: field.is_required() for name, field in model.model_fields.items()}
        for model in _models(module.__name__)
    }
    tables = {
        name: set(table) for name, table in vars(module).items() if name.endswith("_VARIANTS")
    }
    # A tagged type declared as one class with a closed ``type`` member: its values are tags.
    for model in _models(module.__name__):
        tag = model.model_fields.get("type")
        values = get_args(tag.annotation) if tag is not None and tag.is_required() else ()
        name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", model.__name__).upper() + "_VARIANTS"
        if len(values) > 1 and all(isinstance(v, str) for v in values):
            tables.setdefault(name, set(values))
    assert outline.variants == tables


def test_reading_any_host_creates_the_models_of_the_vocabulary_only() -> None:
    probe = textwrap.dedent(
        """
        import sys
        from muse_acp.host.bindings import bindings_for
        from muse_acp.host.session_mcp import session_mcp_transports
        from muse_acp.sim.state.profile import load_profile
        from muse_acp.sim.options.versions import HOST_VERSIONS
        from muse_acp_wire import msp
        for version in ("1.1.1", "1.2.1", "1.3.0"):
            bindings_for(version).serves("turn/start")
            session_mcp_transports(version)
            load_profile(HOST_VERSIONS[version])
        # Newer hosts too: read with their own bundle's outline, never its models.
        from muse_acp.host.features import features_of
        for version in ("1.4.4", "1.4.13", "1.9.0"):
            features_of(version, trust_newer=False).has("goals")
            bindings_for(version).fields("SessionReadResult")
        bundles = ("muse_acp_wire.msp_1", "muse_acp_wire.msp_vocabulary")
        print(sorted(name for name in sys.modules if name.startswith(bundles)))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert completed.stdout.strip() == "['muse_acp_wire.msp_vocabulary']"
