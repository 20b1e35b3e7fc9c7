"""End to end: the lock gates generation and ``check`` catches a stale ``generated/``.

Runs the real driver on a copy of the repository's spec and codegen folders, so the committed
tree is never touched. The copy keeps ACP and the two oldest MSP bundles only: the driver treats
every target alike, and each one it renders costs a generator run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from codegen.config import EXEC_SCHEMA, REPO_ROOT
from codegen.vocabulary import VOCABULARY_FILE

KEPT_BUNDLES = ("1.1.1", "1.2.1")


def _copy_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name in ("spec", "codegen"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "spec" / EXEC_SCHEMA).unlink()
    (root / "spec" / VOCABULARY_FILE).unlink()  # it names a bundle the copy does not keep
    for bundle in (root / "spec" / "msp").iterdir():
        if bundle.is_dir() and bundle.name not in KEPT_BUNDLES:
            shutil.rmtree(bundle)
    lock_path = root / "spec" / "lock.json"
    lock = json.loads(lock_path.read_text(encoding="utf-8"))
    lock["files"] = {
        name: entry for name, entry in lock["files"].items() if (root / "spec" / name).is_file()
    }
    lock_path.write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")
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
    assert _codegen(root, "check").returncode == 1  # nothing generated yet
    assert _codegen(root, "generate").returncode == 0
    assert _codegen(root, "check").returncode == 0

    schema = root / "spec" / "msp" / "1.2.1" / "msp.schema.json"
    text = schema.read_text(encoding="utf-8")
    marker = '"description": "'
    assert marker in text
    schema.write_text(text.replace(marker, marker + "X", 1), encoding="utf-8")

    refused = _codegen(root, "generate")
    assert refused.returncode == 2
    assert "spec/msp/1.2.1/msp.schema.json changed since it was locked" in refused.stderr

    changed = schema.read_text(encoding="utf-8")
    assert '"type": "object"' in changed
    schema.write_text(changed.replace('"type": "object"', '"type": 5', 1), encoding="utf-8")
    unlockable = _codegen(root, "lock")
    assert unlockable.returncode == 2
    assert "spec/msp/1.2.1/msp.schema.json is not a valid draft 2020-12 schema" in (
        unlockable.stderr
    )
    schema.write_text(changed, encoding="utf-8")

    assert _codegen(root, "lock").returncode == 0
    stale = _codegen(root, "check")
    assert stale.returncode == 1
    assert "generated/muse_acp_wire/msp_1_2_1.py (committed)" in stale.stdout

    assert _codegen(root, "generate").returncode == 0
    assert _codegen(root, "check").returncode == 0
