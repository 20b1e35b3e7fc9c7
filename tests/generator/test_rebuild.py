"""Every ingested bundle is what ``python -m codegen ingest`` writes, byte for byte, and agrees
with the official surface recorded beside it.

The release wheels are not part of the repository (they carry Muse's text) and the suite runs
without a network, so the byte-for-byte property is shown in two halves: here, that each
committed bundle is exactly ingest's writer's output for the facts it states (so no file was
edited by hand, and the writer has not changed since); and ``--check``, which rebuilds from a
wheel and compares (tested on a synthetic wheel here; run against the cached real wheels by the
maintainer: ``python -m codegen ingest VERSION --check``). The lock ties the two: it records
each bundle's wheel sha256, which ``--check`` compares too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Final

import pytest

from codegen.config import SPEC_DIR
from codegen.ingest import IngestError, ingest
from codegen.lock import read_lock, write_lock
from codegen.rebuild import compare, rewrite
from codegen.surface import SURFACE_FILE, drift

from .msp_wheel import MODULE, VERSION, write_wheel

INGESTED: Final = sorted(p.parent.name for p in (SPEC_DIR / "msp").glob(f"*/{SURFACE_FILE}"))


def _entry(version: str) -> dict[str, str]:
    return read_lock()[f"msp/{version}/msp.schema.json"]


def test_the_releases_from_1_4_4_to_the_newest_are_ingested() -> None:
    assert {"1.4.4", "1.4.8", "1.4.9", "1.4.11", "1.4.13"} <= set(INGESTED)


@pytest.mark.parametrize("version", INGESTED)
def test_an_ingested_bundle_is_byte_for_byte_what_ingest_writes_and_has_no_drift(
    version: str,
) -> None:
    folder = SPEC_DIR / "msp" / version
    entry = _entry(version)
    assert compare(rewrite(folder, entry), folder) == []
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert entry["fingerprint"] == manifest["fingerprint"]
    assert entry["hostVersion"] == version
    assert len(entry["wheelSha256"]) == 64
    assert drift(folder) == []


def _copy(tmp_path: Path, version: str) -> Path:
    folder = tmp_path / version
    shutil.copytree(SPEC_DIR / "msp" / version, folder)
    return folder


def test_a_changed_member_is_drift_and_not_what_ingest_writes(tmp_path: Path) -> None:
    version = INGESTED[-1]
    folder = _copy(tmp_path, version)
    schema = folder / "msp.schema.json"
    bundle = json.loads(schema.read_text(encoding="utf-8"))
    required = bundle["$defs"]["TurnStartParams"]["required"]
    assert "sessionId" in required
    required.remove("sessionId")
    schema.write_text(json.dumps(bundle, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    path = "types.TurnStartParams.members.sessionId.required"
    assert drift(folder) == [f"{path}: official true, bundle false"]
    assert compare(rewrite(folder, _entry(version)), folder) == [SURFACE_FILE]


def test_an_edited_description_is_not_what_ingest_writes(tmp_path: Path) -> None:
    version = INGESTED[-1]
    folder = _copy(tmp_path, version)
    schema = folder / "msp.schema.json"
    text = schema.read_text(encoding="utf-8")
    edited = text.replace("An MSP object type.", "An MSP object type, edited.", 1)
    assert edited != text
    schema.write_text(edited, encoding="utf-8")
    assert drift(folder) == []  # the surface holds no text
    assert compare(rewrite(folder, _entry(version)), folder) == ["msp.schema.json"]


def test_check_passes_on_what_the_wheel_rebuilds_and_names_what_differs(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    wheel = write_wheel(tmp_path)
    ingest(VERSION, wheel, spec)
    lock = (spec / "lock.json").read_bytes()
    assert ingest(VERSION, wheel, spec, check=True) == []
    readme = spec / "msp" / VERSION / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    with pytest.raises(IngestError, match=r"README\.md differ; run without --check"):
        ingest(VERSION, wheel, spec, check=True)
    # The same facts from another wheel (other text, so other bytes): the lock tells them apart.
    ingest(VERSION, wheel, spec)
    other = write_wheel(tmp_path / "other", MODULE.replace("Synthetic declarations.", "Other."))
    with pytest.raises(IngestError, match=r"lock\.json \(wheel sha256"):
        ingest(VERSION, other, spec, check=True)
    assert (spec / "lock.json").read_bytes() == lock


def test_ingest_and_lock_write_the_lock_alike(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    (spec / "msp").mkdir(parents=True)
    # A spec file whose name sorts between "msp" and "msp/..." as text but not as a path.
    (spec / "msp-vocabulary.json").write_text("{}\n", encoding="utf-8")
    write_lock(spec, spec / "lock.json")
    ingest(VERSION, write_wheel(tmp_path), spec)
    ingested = (spec / "lock.json").read_bytes()
    assert write_lock(spec, spec / "lock.json") == []
    assert (spec / "lock.json").read_bytes() == ingested


def test_check_covers_a_package_holding_another_host_version(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    wheel = write_wheel(tmp_path, version="9.8.8")
    ingest(VERSION, wheel, spec, package="9.8.8")
    folder = spec / "msp" / VERSION
    entry = read_lock(spec / "lock.json")[f"msp/{VERSION}/msp.schema.json"]
    assert compare(rewrite(folder, entry), folder) == []
    assert ingest(VERSION, wheel, spec, package="9.8.8", check=True) == []
    # The same declarations under the host's own package version: the README and lock differ.
    same = write_wheel(tmp_path / "own")
    with pytest.raises(IngestError, match=r"README\.md, lock\.json \(package 9\.8\.8\) differ"):
        ingest(VERSION, same, spec, check=True)


def test_the_1_3_0_bundle_is_muse_s_1_3_0_declarations_from_package_1_3_1() -> None:
    entry = _entry("1.3.0")
    assert (entry["hostVersion"], entry["packageVersion"]) == ("1.3.0", "1.3.1")
    assert entry["fingerprint"].startswith("sha256:b1e6676d")
    readme = (SPEC_DIR / "msp" / "1.3.0" / "README.md").read_text(encoding="utf-8")
    assert "`python -m codegen ingest 1.3.0 --package 1.3.1`" in readme
    assert entry["wheelSha256"] in readme
