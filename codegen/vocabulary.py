"""Which MSP bundle is the vocabulary, and the newer types it gains without re-spelling them.

Contract: the vocabulary is the bundle whose models the runtime builds and reads frames with:
muse-acp's own reading of MSP (``spec/msp-vocabulary/``, which is no host's bundle), else the
newest bundle. ``spec/msp-vocabulary.json`` (optional) may name a host bundle instead
(``version``) and lists ``additions``, type names of the newest bundle the vocabulary also
offers. ``additions(newest, vocabulary, roots)``
returns the source of ``msp_additions``: each root and every class or type alias it refers to,
in the newest bundle's order, except names the vocabulary already defines, which the module
imports from the vocabulary instead (its names win). The vocabulary's model of such a borrowed
name must read what the newest bundle declares: every member it requires is one the newest
bundle requires (members it does not know are ignored). A root the vocabulary already defines, a
root the newest bundle lacks, or a borrowed name the vocabulary could not read is a
``SchemaError`` naming it.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from codegen.handshake import _defined_name, _is_model_definition, _mentioned
from codegen.outline import models_of
from codegen.prepass import SchemaError

__all__ = ["ADDITIONS_MODULE", "VOCABULARY_FILE", "Vocabulary", "additions", "read_vocabulary"]

VOCABULARY_FILE: Final = "msp-vocabulary.json"
"""The file under spec/ that configures the vocabulary."""
ADDITIONS_MODULE: Final = "msp_additions"


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The configured vocabulary: a host bundle's version (None: muse-acp's own, else the
    newest) and the roots."""

    version: str | None
    additions: tuple[str, ...]


def read_vocabulary(spec_dir: Path) -> Vocabulary:
    """The configuration in ``spec_dir``; the newest bundle and no additions without one."""
    path = spec_dir / VOCABULARY_FILE
    if not path.is_file():
        return Vocabulary(None, ())
    document = json.loads(path.read_text(encoding="utf-8"))
    version = document.get("version")
    roots = document.get("additions", [])
    if not (version is None or isinstance(version, str)) or not all(
        isinstance(root, str) for root in roots
    ):
        raise SchemaError(f"spec/{VOCABULARY_FILE}: version must be a string, additions names")
    return Vocabulary(version, tuple(roots))


def _definitions(module: ast.Module) -> dict[str, ast.stmt]:
    return {
        name: node
        for node in module.body
        if _is_model_definition(node) and (name := _defined_name(node)) is not None
    }


def additions(
    newest: str,
    newest_version: str,
    vocabulary: str,
    vocabulary_module: str,
    roots: tuple[str, ...],
) -> str:
    """The ``msp_additions`` source (unformatted; see the module contract)."""
    new_tree, old_tree = ast.parse(newest), ast.parse(vocabulary)
    new_defs, old_defs = _definitions(new_tree), _definitions(old_tree)
    new_fields, old_fields = models_of(new_tree), models_of(old_tree)
    clashing = sorted(root for root in roots if root in old_defs)
    if clashing:
        raise SchemaError(
            f"spec/{VOCABULARY_FILE}: {', '.join(clashing)} already in the vocabulary "
            f"({vocabulary_module}); its own definition is used, so drop it from additions"
        )
    missing = sorted(root for root in roots if root not in new_defs)
    if missing:
        raise SchemaError(
            f"spec/{VOCABULARY_FILE}: {', '.join(missing)} not defined by the newest bundle "
            f"{newest_version}"
        )
    added: set[str] = set()
    borrowed: set[str] = set()
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in added or name in borrowed:
            continue
        if name in old_defs:
            unreadable = sorted(
                member
                for member, required in old_fields.get(name, {}).items()
                if required and not new_fields.get(name, {}).get(member, False)
            )
            if unreadable:
                raise SchemaError(
                    f"vocabulary addition: {name} is needed by an addition, and the vocabulary "
                    f"({vocabulary_module}) requires members of it that {newest_version} does "
                    f"not ({', '.join(unreadable)}), so it could not read the newer frames; "
                    "drop the addition or correct the vocabulary's bundle"
                )
            borrowed.add(name)
            continue
        added.add(name)
        pending.extend(n for n in _mentioned(new_defs[name]) if n in new_defs)
    lines = newest.splitlines(keepends=True)

    def text_of(node: ast.stmt) -> str:
        assert node.end_lineno is not None
        return "".join(lines[node.lineno - 1 : node.end_lineno])

    imports = "".join(
        text_of(node) for node in new_tree.body if isinstance(node, ast.Import | ast.ImportFrom)
    )
    reuse = (
        f"from muse_acp_wire.{vocabulary_module} import (\n"
        + "".join(f"    {name},\n" for name in sorted(borrowed))
        + ")\n"
        if borrowed
        else ""
    )
    body = [text_of(node) for name, node in new_defs.items() if name in added]
    return (
        f'"""MSP types of the newest bundle, {newest_version}, that the vocabulary adds.\n\n'
        "Generated by `python -m codegen generate` from the roots in "
        f"``spec/{VOCABULARY_FILE}``; do not edit.\nEach root and what it refers to, except "
        f"what the vocabulary ({vocabulary_module}) defines itself,\nwhich is imported from it. "
        '``muse_acp_wire.msp`` re-exports them all.\n"""\n\n'
        + imports
        + reuse
        + "\n\n"
        + "\n\n".join(body)
    )
