"""Read the facts of one MSP release from Muse's published declarations module, without running it.

Muse publishes its MSP wire types for every release as the ``muse-code-msp`` wheel, whose
``muse_code_msp/__init__.py`` is generated Python in a fixed shape: ``SCHEMA_FINGERPRINT`` and
``REQUIRED_HOST_VERSION`` constants, each type as a TypedDict (required members in ``_XBase``,
optional ones in ``X(total=False)``, ``T | None`` for nullable), open enums as ``X = str`` with an
``X_KNOWN_VALUES`` tuple, closed enums as ``Literal``, and the tables ``METHODS``,
``NOTIFICATIONS``, ``ERRORS`` and ``GRANTABLE_CAPABILITIES``. ``read_declarations`` parses that
module with ``ast`` only (a wheel is never imported or executed) and keeps facts, never text:
docstrings, comments and table descriptions are dropped.
"""

from __future__ import annotations

import ast
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

STABLE_MEMBER: Final = "muse_code_msp/__init__.py"
"""The wheel member holding the stable surface."""
EXPERIMENTAL_MEMBER: Final = "muse_code_msp/experimental/__init__.py"
"""The wheel member holding the stable and experimental surfaces together."""

_FINGERPRINT: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
_PRIMITIVES: Final[dict[str, dict[str, Any]]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "None": {"type": "null"},
    "Any": {},
}
_TABLES: Final = ("METHODS", "NOTIFICATIONS", "ERRORS", "GRANTABLE_CAPABILITIES")


class DeclarationsError(Exception):
    """The wheel or its module is not a declarations module ingest can read; says what is wrong."""


@dataclass(frozen=True, slots=True)
class Member:
    """One member of an object type: its JSON Schema (without null), requiredness, nullability."""

    schema: dict[str, Any]
    required: bool
    nullable: bool


@dataclass(slots=True)
class Declarations:
    """The protocol facts of one release's stable surface."""

    fingerprint: str
    host_version: str
    schema_version: int
    objects: dict[str, dict[str, Member]] = field(default_factory=dict)
    open_enums: dict[str, tuple[str, ...]] = field(default_factory=dict)
    closed_enums: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    aliases: dict[str, dict[str, Any]] = field(default_factory=dict)
    methods: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    notifications: dict[str, str | None] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    capabilities: tuple[str, ...] = ()

    def type_names(self) -> set[str]:
        return set(self.objects) | set(self.open_enums) | set(self.closed_enums) | set(self.aliases)


def module_source(wheel: Path, member: str = STABLE_MEMBER) -> str:
    """The text of ``member`` inside ``wheel``, read as a zip archive."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            return archive.read(member).decode("utf-8")
    except KeyError:
        raise DeclarationsError(
            f"{wheel.name} has no {member}; is it a muse-code-msp wheel?"
        ) from None
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:
        raise DeclarationsError(f"{wheel.name} cannot be read as a wheel: {exc}") from exc


def _public(name: str) -> str:
    """Private union arms (``_XStdio``) become ``XStdio`` in the bundle."""
    return name.lstrip("_")


def _upper_snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _literal(node: ast.expr, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError as exc:
        raise DeclarationsError(f"{where} is not a literal value") from exc


@dataclass(frozen=True, slots=True)
class _TypedDict:
    """A TypedDict as declared: class syntax, or the call syntax the module uses for members
    whose names are Python keywords (``TypedDict("X", {"from": "T"}, total=False)``)."""

    bases: tuple[str, ...]
    total: bool
    members: tuple[tuple[str, ast.expr], ...]


def _total(keywords: list[ast.keyword]) -> bool:
    return not any(
        k.arg == "total" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in keywords
    )


def _from_class(node: ast.ClassDef) -> _TypedDict:
    bases = tuple(base.id for base in node.bases if isinstance(base, ast.Name))
    members = tuple(
        (statement.target.id, statement.annotation)
        for statement in node.body
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
    )
    return _TypedDict(bases, _total(node.keywords), members)


def _from_call(node: ast.expr) -> _TypedDict | None:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return None
    if node.func.id != "TypedDict" or len(node.args) != 2:
        return None
    fields = node.args[1]
    if not isinstance(fields, ast.Dict):
        return None
    members = tuple(
        (key.value, value)
        for key, value in zip(fields.keys, fields.values, strict=True)
        if isinstance(key, ast.Constant) and isinstance(key.value, str)
    )
    return _TypedDict(("TypedDict",), _total(node.keywords), members)


class _Reader:
    """One pass over the module body; ``schema_of`` turns an annotation into JSON Schema."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.constants: dict[str, Any] = {}
        self.classes: dict[str, _TypedDict] = {}
        self.assigns: dict[str, ast.expr] = {}
        for node in tree.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if node.value is not None:
                    self.constants[node.target.id] = _literal(node.value, node.target.id)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    declared = _from_call(node.value)
                    if declared is not None:
                        self.classes[target.id] = declared
                    else:
                        self.assigns[target.id] = node.value
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = _from_class(node)

    def schema_of(self, node: ast.expr, where: str) -> dict[str, Any]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.schema_of(ast.parse(node.value, mode="eval").body, where)
        if isinstance(node, ast.Constant) and node.value is None:
            return {"type": "null"}
        if isinstance(node, ast.Name):
            if node.id in _PRIMITIVES:
                return dict(_PRIMITIVES[node.id])
            return {"$ref": f"#/$defs/{_public(node.id)}"}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            arms: list[dict[str, Any]] = []
            for side in (node.left, node.right):
                schema = self.schema_of(side, where)
                arms.extend(schema["anyOf"] if list(schema) == ["anyOf"] else [schema])
            return {"anyOf": arms}
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            head, arg = node.value.id, node.slice
            if head == "Literal":
                values = arg.elts if isinstance(arg, ast.Tuple) else [arg]
                found = [_literal(v, where) for v in values]
                return {"const": found[0]} if len(found) == 1 else {"enum": found}
            if head == "list" or (head == "tuple" and isinstance(arg, ast.Tuple)):
                item = arg.elts[0] if isinstance(arg, ast.Tuple) else arg
                return {"type": "array", "items": self.schema_of(item, where)}
            if head == "dict" and isinstance(arg, ast.Tuple) and len(arg.elts) == 2:
                return {
                    "type": "object",
                    "additionalProperties": self.schema_of(arg.elts[1], where),
                }
        raise DeclarationsError(f"{where}: cannot read the annotation {ast.unparse(node)!r}")

    def members_of(self, name: str) -> dict[str, Member]:
        """Members of class ``name`` and its ``_XBase`` parents, in declaration order."""
        declared = self.classes[name]
        members: dict[str, Member] = {}
        for base in declared.bases:
            if base in self.classes:
                members.update(self.members_of(base))
        for member, annotation in declared.members:
            schema = self.schema_of(annotation, f"{name}.{member}")
            arms = schema.get("anyOf", [])
            nullable = {"type": "null"} in arms
            if nullable:
                rest = [arm for arm in arms if arm != {"type": "null"}]
                schema = rest[0] if len(rest) == 1 else {"anyOf": rest}
            members[member] = Member(schema, declared.total, nullable)
        return members


def _bases(reader: _Reader) -> set[str]:
    """Classes that only carry another class's required members (``_XBase``)."""
    return {
        base
        for declared in reader.classes.values()
        for base in declared.bases
        if base in reader.classes
    }


def _table_shapes(tree: ast.Module) -> set[str]:
    """The TypedDicts that type the tables themselves (``MethodSpec`` ...), not protocol types."""
    shapes: set[str] = set()
    for node in tree.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in _TABLES
        ):
            shapes.update(n.id for n in ast.walk(node.annotation) if isinstance(n, ast.Name))
    return shapes


def parse_declarations(source: str, origin: str) -> Declarations:
    """The facts of a declarations module's text; ``origin`` names it in error messages."""
    try:
        tree = ast.parse(source, filename=origin)
    except SyntaxError as exc:
        raise DeclarationsError(
            f"{origin} does not parse as Python (line {exc.lineno}: {exc.msg}); "
            "the wheel is damaged or not a muse-code-msp release"
        ) from exc
    reader = _Reader(tree)
    missing = [
        name
        for name in ("SCHEMA_FINGERPRINT", "REQUIRED_HOST_VERSION", *_TABLES)
        if name not in reader.constants
    ]
    if missing:
        raise DeclarationsError(f"{origin} lacks {', '.join(missing)}; not a declarations module")
    fingerprint = reader.constants["SCHEMA_FINGERPRINT"]
    if not isinstance(fingerprint, str) or not _FINGERPRINT.match(fingerprint):
        raise DeclarationsError(f"{origin}: SCHEMA_FINGERPRINT {fingerprint!r} is not sha256:<hex>")
    found = Declarations(
        fingerprint=fingerprint,
        host_version=str(reader.constants["REQUIRED_HOST_VERSION"]),
        schema_version=int(reader.constants.get("SCHEMA_VERSION", 1)),
    )
    skip = _bases(reader) | _table_shapes(tree)
    for name in reader.classes:
        if name not in skip:
            found.objects[_public(name)] = reader.members_of(name)
    for name, value in reader.assigns.items():
        known = reader.constants.get(f"{_upper_snake(name)}_KNOWN_VALUES")
        if isinstance(value, ast.Name) and value.id == "str" and known is not None:
            found.open_enums[name] = tuple(known)
            continue
        schema = reader.schema_of(value, name)
        if "enum" in schema or "const" in schema:
            found.closed_enums[_public(name)] = tuple(schema.get("enum", [schema.get("const")]))
        else:
            found.aliases[_public(name)] = schema
    for method, spec in reader.constants["METHODS"].items():
        found.methods[method] = (spec.get("params"), spec.get("result"))
    for method, spec in reader.constants["NOTIFICATIONS"].items():
        found.notifications[method] = spec.get("params")
    for row in reader.constants["ERRORS"]:
        found.errors.append(
            {
                "code": int(row["code"]),
                "kind": str(row["kind"]),
                "retryable": bool(row["retryable"]),
                "overrideKinds": list(row.get("overrideKinds", ())),
            }
        )
    found.capabilities = tuple(reader.constants["GRANTABLE_CAPABILITIES"])
    _check_references(found, origin)
    return found


def _check_references(found: Declarations, origin: str) -> None:
    names = found.type_names()
    used = [name for pair in found.methods.values() for name in pair if name is not None]
    used += [name for name in found.notifications.values() if name is not None]
    dangling = sorted({name for name in used if name not in names})
    if dangling:
        raise DeclarationsError(f"{origin}: the tables name undeclared types {dangling}")


def read_declarations(wheel: Path) -> Declarations:
    """The stable surface of ``wheel`` (its ``muse_code_msp/__init__.py``)."""
    return parse_declarations(module_source(wheel), f"{wheel.name}:{STABLE_MEMBER}")


def read_experimental(wheel: Path) -> Declarations | None:
    """The stable-plus-experimental surface of ``wheel``, or None when it ships none."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            if EXPERIMENTAL_MEMBER not in archive.namelist():
                return None
    except (zipfile.BadZipFile, OSError) as exc:
        raise DeclarationsError(f"{wheel.name} cannot be read as a wheel: {exc}") from exc
    source = module_source(wheel, EXPERIMENTAL_MEMBER)
    return parse_declarations(source, f"{wheel.name}:{EXPERIMENTAL_MEMBER}")
