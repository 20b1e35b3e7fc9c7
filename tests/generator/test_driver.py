"""End to end: the lock gates generation and ``check`` catches a stale ``generated/``.

Runs the real driver on a copy of the repository's spec, codegen and generated folders, so the
committed tree is never touched.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from codegen.config import REPO_ROOT


def _copy_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name in ("spec", "codegen", "generated"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def _codegen(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_changed_spec_byte_is_refused_then_flagged_stale_until_regenerated(
    tmp_path: Path,
) -> None:
    root = _copy_repo(tmp_path)
    assert _codegen(root, "check").returncode == 0

    schema = root / "spec" / "msp" / "1.2.1" / "msp.schema.json"
    text = schema.read_text(encoding="utf-8")
    marker = '"description": "'
    assert marker in text
    schema.write_text(text.replace(marker, marker + "X", 1), encoding="utf-8")

    refused = _codegen(root, "generate")
    assert refused.returncode == 2
    assert "spec/msp/1.2.1/msp.schema.json changed since it was locked" in refused.stderr

    assert _codegen(root, "lock").returncode == 0
    stale = _codegen(root, "check")
    assert stale.returncode == 1
    assert "generated/muse_acp_wire/msp_1_2_1.py (committed)" in stale.stdout

    assert _codegen(root, "generate").returncode == 0
    assert _codegen(root, "check").returncode == 0
