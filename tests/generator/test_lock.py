"""The lock refuses generation from spec files whose bytes changed since they were recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.lock import LockMismatchError, read_lock, verify_lock, write_lock


def _spec(tmp_path: Path) -> tuple[Path, Path]:
    spec = tmp_path / "spec"
    (spec / "msp" / "9.9.9").mkdir(parents=True)
    (spec / "acp").mkdir()
    (spec / "acp" / "acp.schema.json").write_text('{"a": 1}\n', encoding="utf-8")
    (spec / "msp" / "9.9.9" / "msp.schema.json").write_text("{}\n", encoding="utf-8")
    return spec, spec / "lock.json"


def test_a_fresh_lock_verifies_and_records_provenance(tmp_path: Path) -> None:
    spec, lock = _spec(tmp_path)
    assert write_lock(spec, lock) == ["acp/acp.schema.json", "msp/9.9.9/msp.schema.json"]
    verify_lock(spec, lock)
    entries = read_lock(lock)
    assert "9.9.9" in entries["msp/9.9.9/msp.schema.json"]["provenance"]


def test_one_changed_byte_makes_the_lock_refuse_until_it_is_rewritten(tmp_path: Path) -> None:
    spec, lock = _spec(tmp_path)
    write_lock(spec, lock)
    schema = spec / "acp" / "acp.schema.json"
    schema.write_bytes(schema.read_bytes().replace(b"1", b"2"))
    with pytest.raises(LockMismatchError, match=r"acp/acp\.schema\.json changed"):
        verify_lock(spec, lock)
    assert write_lock(spec, lock) == ["acp/acp.schema.json"]
    verify_lock(spec, lock)


def test_unlocked_and_vanished_files_are_both_reported(tmp_path: Path) -> None:
    spec, lock = _spec(tmp_path)
    write_lock(spec, lock)
    (spec / "acp" / "acp.schema.json").unlink()
    (spec / "acp" / "new.json").write_text("{}", encoding="utf-8")
    with pytest.raises(LockMismatchError) as raised:
        verify_lock(spec, lock)
    assert "acp/new.json is not in spec/lock.json" in str(raised.value)
    assert "acp/acp.schema.json, which does not exist" in str(raised.value)


def test_provenance_survives_a_relock(tmp_path: Path) -> None:
    spec, lock = _spec(tmp_path)
    write_lock(spec, lock)
    text = lock.read_text(encoding="utf-8").replace("Written for muse-acp from the", "Edited:")
    lock.write_text(text, encoding="utf-8")
    (spec / "acp" / "acp.schema.json").write_text('{"a": 3}\n', encoding="utf-8")
    write_lock(spec, lock)
    assert read_lock(lock)["acp/acp.schema.json"]["provenance"].startswith("Edited:")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"type": "object", "properties": {"a": {"type": 5}}}\n', "at properties/a/type"),
        ('{"minLength": -1}\n', "at minLength"),
        ('{"type": "object",}\n', "is not JSON"),
    ],
)
def test_a_schema_that_is_not_a_valid_schema_is_refused_and_the_lock_kept(
    tmp_path: Path, text: str, why: str
) -> None:
    spec, lock = _spec(tmp_path)
    write_lock(spec, lock)
    recorded = lock.read_bytes()
    schema = spec / "msp" / "9.9.9" / "msp.schema.json"
    schema.write_text(text, encoding="utf-8")
    with pytest.raises(LockMismatchError) as raised:
        write_lock(spec, lock)
    assert "spec/msp/9.9.9/msp.schema.json" in str(raised.value)
    assert why in str(raised.value)
    assert "the lock is unchanged" in str(raised.value)
    assert lock.read_bytes() == recorded
    schema.write_text('{"type": "object"}\n', encoding="utf-8")
    assert write_lock(spec, lock) == ["msp/9.9.9/msp.schema.json"]
    verify_lock(spec, lock)


def test_a_manifest_is_locked_as_plain_json_not_as_a_schema(tmp_path: Path) -> None:
    spec, lock = _spec(tmp_path)
    manifest = spec / "msp" / "9.9.9" / "manifest.json"
    manifest.write_text('{"minLength": -1, "fingerprint": "abc"}\n', encoding="utf-8")
    assert "msp/9.9.9/manifest.json" in write_lock(spec, lock)
    manifest.write_text("not json\n", encoding="utf-8")
    with pytest.raises(LockMismatchError, match=r"manifest\.json is not JSON"):
        write_lock(spec, lock)
