"""A cache of rendered targets, for runs that render the same inputs again (the tests).

Contract: with ``MUSE_ACP_CODEGEN_CACHE`` naming a folder, ``cached(target, render)`` returns
the text ``render`` gave before for the same key, else renders and stores it; without the
variable it just renders. The key is the sha256 of everything a render reads: the target
(module, inputs, family, version), the bytes of its input files, every file of ``codegen/``
(templates included), and the versions of Python, datamodel-code-generator and ruff. So a
changed input, generator or tool never meets an old text. The cache is off by default: a check
that must be trusted from scratch (CI, ``nox -s codegen_check``) renders everything.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import Final

from codegen.config import SPEC_DIR, Target

__all__ = ["CACHE_ENV", "cached"]

CACHE_ENV: Final = "MUSE_ACP_CODEGEN_CACHE"
_CODEGEN: Final = Path(__file__).resolve().parent


@cache
def _tools() -> bytes:
    """The generator's own files and tool versions (fixed for a process)."""
    digest = hashlib.sha256()
    for path in sorted(
        p for p in _CODEGEN.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    ):
        digest.update(path.relative_to(_CODEGEN).as_posix().encode() + b"\0" + path.read_bytes())
    for tool in ("datamodel-code-generator", "ruff"):
        digest.update(f"{tool}={version(tool)}\0".encode())
    digest.update(sys.version.encode())
    return digest.digest()


def _key(target: Target) -> str:
    digest = hashlib.sha256(_tools())
    digest.update(repr(target).encode())
    for name in target.inputs:
        digest.update(name.encode() + b"\0" + (SPEC_DIR / name).read_bytes())
    return digest.hexdigest()


def cached(target: Target, render: Callable[[Target], str]) -> str:
    """``render(target)``, or the text it gave before for the same key (see the contract)."""
    folder = os.environ.get(CACHE_ENV)
    if not folder:
        return render(target)
    path = Path(folder) / f"{target.module}-{_key(target)}.py"
    if path.is_file():
        return path.read_text(encoding="utf-8")
    text = render(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)  # whole or absent, for runs that share the folder
    return text
