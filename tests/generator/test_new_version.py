"""A new Muse version needs exactly the steps docs/development.md lists, and no edit anywhere else.

On a copy of the repository, the newest MSP bundle is copied under a version number no host
has, locked and generated. Then, with no other edit: codegen made its module and lists it, the
vocabulary stays muse-acp's own and takes its additions from the new one, and the runtime
chooses that bundle for a host reporting the version. muse-sim does not play it until it is
listed as played.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from codegen.config import EXEC_SCHEMA, REPO_ROOT, SPEC_DIR
from muse_acp_wire.msp_bundles import BUNDLES, VOCABULARY_MODULE

NEW = "9.9.9"


KEPT_BUNDLES = (list(BUNDLES)[-1],)
"""The copy keeps the newest bundle (the additions' source; the vocabulary is not a bundle, it is
in ``spec/msp-vocabulary/``), and drops the
exec output format: each target the driver renders costs a generator run, and the steps treat
every bundle alike."""


def _copy_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name in ("spec", "codegen", "generated", "runtime"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    for bundle in (root / "spec" / "msp").iterdir():
        if bundle.is_dir() and bundle.name not in KEPT_BUNDLES:
            shutil.rmtree(bundle)
    (root / "spec" / EXEC_SCHEMA).unlink()
    _run(root, "-m", "codegen", "lock")
    return root


def _run(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    paths = os.pathsep.join(str(root / part) for part in ("runtime", "generated", "."))
    completed = subprocess.run(
        [sys.executable, *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": paths, **(env or {})},
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout


def test_a_copied_bundle_is_picked_up_by_codegen_the_runtime_and_the_simulator(
    tmp_path: Path,
) -> None:
    root = _copy_repo(tmp_path)
    newest = list(BUNDLES)[-1]
    shutil.copytree(SPEC_DIR / "msp" / newest, root / "spec" / "msp" / NEW)
    # The documented steps: lock, generate (diff and nox are for the maintainer's eyes).
    _run(root, "-m", "codegen", "lock")
    _run(root, "-m", "codegen", "generate")
    assert (root / "generated" / "muse_acp_wire" / "msp_9_9_9.py").is_file()
    assert _run(root, "-m", "codegen", "diff", f"spec/msp/{newest}", f"spec/msp/{NEW}")

    seam = _run(
        root,
        "-c",
        "import json; from muse_acp.host.bindings import bindings_for; "
        "from muse_acp_wire import msp, msp_additions; b = bindings_for('9.9.9'); "
        "n = bindings_for('9.10.0'); "
        "print(json.dumps([b.version, b.exact, n.version, n.exact, msp.VOCABULARY_MODULE, "
        "msp_additions.__doc__.splitlines()[0]]))",
    )
    assert json.loads(seam) == [
        NEW,
        True,
        NEW,
        False,
        VOCABULARY_MODULE,
        f"MSP types of the newest bundle, {NEW}, that the vocabulary adds.",
    ]

    env = {"MUSE_SIM_VERSION": NEW, "MUSE_SIM_HOME": str(tmp_path / "sim")}
    refused = subprocess.run(
        [sys.executable, "-m", "muse_acp.sim", "--version"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **os.environ,
            **env,
            "PYTHONPATH": os.pathsep.join(str(root / p) for p in ("runtime", "generated")),
        },
    )
    assert refused.returncode != 0
    assert f"{NEW!r} is not a simulated host version" in refused.stderr
