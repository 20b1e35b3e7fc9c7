"""Where the generator reads and writes, and every datamodel-code-generator flag, in one place.

A target is one generated module built from one or more spec files. The ACP schema and the Muse
extension schema form one module (the extensions refer to ACP content blocks); the output format
of the legacy ``muse exec --json`` forms another (``exec_jsonl``); each MSP host version under
``spec/msp/<version>/`` forms a module of its own, so a newly exported host schema dropped into
that folder is picked up without touching this file. muse-acp's own reading of MSP, the
vocabulary the runtime builds and parses every host's frames with, is one more module
(``msp_vocabulary``) from ``spec/msp-vocabulary/``: it is no host's bundle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
SPEC_DIR: Final = REPO_ROOT / "spec"
LOCK_FILE: Final = SPEC_DIR / "lock.json"
PACKAGE_DIR: Final = REPO_ROOT / "generated" / "muse_acp_wire"
TEMPLATES_DIR: Final = Path(__file__).resolve().parent / "templates"

REGENERATE_COMMAND: Final = "nox -s codegen"
"""What a generated header tells a reader to run after changing a spec file."""

DATAMODEL_CODEGEN_VERSION: Final = "0.89.0"
"""The exact generator release the committed output was made with (pinned in pyproject)."""

# Every flag handed to datamodel-code-generator. Formatting is left to ruff afterwards so the
# check compares the same text that is committed.
DATAMODEL_CODEGEN_FLAGS: Final[tuple[str, ...]] = (
    "--input-file-type=jsonschema",
    "--output-model-type=pydantic_v2.BaseModel",
    "--target-python-version=3.11",
    "--base-class=muse_acp_wire._base.WireModel",
    "--class-name=CodegenRoot",
    "--use-annotated",
    "--use-field-description",
    "--use-schema-description",
    "--snake-case-field",
    "--disable-timestamp",
    "--collapse-root-models",
    "--use-union-operator",
    "--use-standard-collections",
    "--enum-field-as-literal=all",
    "--use-title-as-name",
    "--union-mode=left_to_right",
    "--use-double-quotes",
    "--no-formatters",
)

ROOT_CLASS_NAME: Final = "CodegenRoot"
"""Name given to the schema root, which carries only ``$defs`` and is dropped after generation."""

VOCABULARY_SCHEMA: Final = "msp-vocabulary/msp.schema.json"
"""muse-acp's own MSP vocabulary (``codegen.vocabulary``), generated as ``msp_vocabulary``."""

EXEC_SCHEMA: Final = "exec/exec.schema.json"
"""The schema of the JSON Lines that ``muse exec --json`` writes (hosts without ``serve``)."""

HANDSHAKE_ROOTS: Final = (
    "InitializeRequest",
    "InitializeResponse",
    "MuseAgentMeta",
    "MuseClientCapabilitiesMeta",
    "MuseTerminalAuthMeta",
    "MuseBackend",
    "MuseBackendReport",
    "JetbrainsAgentMeta",
    "JetbrainsClientCapabilitiesMeta",
)
"""The ACP models an agent needs before it answers ``initialize`` (its request, its answer and
the ``_meta`` blocks of both): ``acp_handshake`` holds them and what they refer to
(``codegen.handshake``)."""

_MSP_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


@dataclass(frozen=True, slots=True)
class Target:
    """One generated module and the spec files it is built from (paths relative to spec/)."""

    module: str
    inputs: tuple[str, ...]
    family: Literal["acp", "exec", "msp", "vocabulary"]
    host_version: str | None = None

    @property
    def output(self) -> Path:
        return PACKAGE_DIR / f"{self.module}.py"


def discover_targets(spec_dir: Path = SPEC_DIR) -> tuple[Target, ...]:
    """Return every target: ACP, the exec output format, the MSP vocabulary, then MSP versions in
    ascending order."""
    targets = [Target("acp", ("acp/acp.schema.json", "extensions/muse.schema.json"), "acp")]
    if (spec_dir / EXEC_SCHEMA).is_file():
        targets.append(Target("exec_jsonl", (EXEC_SCHEMA,), "exec"))
    if (spec_dir / VOCABULARY_SCHEMA).is_file():
        targets.append(Target("msp_vocabulary", (VOCABULARY_SCHEMA,), "vocabulary"))
    versions = sorted(
        (p.name for p in (spec_dir / "msp").iterdir() if p.is_dir() and _MSP_VERSION.match(p.name)),
        key=lambda v: tuple(int(part) for part in v.split(".")),
    )
    for version in versions:
        module = "msp_" + version.replace(".", "_")
        inputs = (f"msp/{version}/msp.schema.json", f"msp/{version}/manifest.json")
        targets.append(Target(module, inputs, "msp", host_version=version))
    return tuple(targets)
