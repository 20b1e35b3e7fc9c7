"""The lock on the generator inputs: each spec file's sha256 and provenance in ``spec/lock.json``.

Generation refuses to run while any spec file differs from its recorded hash, so a schema change
is always a deliberate, reviewed step: edit the spec, run ``python -m codegen lock``, regenerate,
and commit the three together. ``lock`` is also where a spec file is checked: it refuses to
record a file that is not JSON, or a ``*.schema.json`` that is not a valid draft 2020-12 schema,
and then leaves the lock as it was. So every input generation accepts has passed that check once,
and a render does not repeat it (checking every schema against the meta-schema is a fifth of a
render's time).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError as MetaSchemaError

from codegen.config import LOCK_FILE, SPEC_DIR

LOCK_VERSION: Final = 1

_DEFAULT_PROVENANCE: Final = {
    "acp": (
        "Written for muse-acp from the Agent Client Protocol v1 specification "
        "(schema release 1.25.0, with the plan operations and subagent sessions of the "
        "unstable schema); covers the subset muse-acp speaks."
    ),
    "extensions": "Written for muse-acp: the Muse extensions muse-acp negotiates over ACP.",
    "exec": (
        "Written for muse-acp from public descriptions of the `muse exec --json` output of Muse "
        "releases without `serve`; spec/README.md says which members are evidenced."
    ),
    "msp-vocabulary": (
        "Written for muse-acp: its own reading of MSP (the vocabulary), started from the "
        "hand-written 1.4.2 bundle; spec/README.md says what it is written from."
    ),
    "msp": (
        "Written for muse-acp from observed Muse {version} host traffic, in the layout of a "
        "`muse schema generate-json-schema` export."
    ),
}


class LockMismatchError(Exception):
    """A spec file and ``spec/lock.json`` disagree, or a spec file cannot be locked; the message
    says what to do."""


SCHEMA_SUFFIX: Final = ".schema.json"
"""Spec files that are JSON Schemas (the others, such as manifests, are plain JSON)."""


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def spec_files(spec_dir: Path = SPEC_DIR) -> list[Path]:
    """Every locked input: the JSON files under spec/, except the lock itself."""
    lock = spec_dir / LOCK_FILE.name
    return sorted(p for p in spec_dir.rglob("*.json") if p != lock)


def _relative(path: Path, spec_dir: Path) -> str:
    return path.relative_to(spec_dir).as_posix()


def _default_provenance(relative: str) -> str:
    family = relative.split("/", 1)[0]
    if family == "msp":
        return _DEFAULT_PROVENANCE["msp"].format(version=relative.split("/")[1])
    return _DEFAULT_PROVENANCE.get(family, "Written for muse-acp.")


def read_lock(lock_file: Path = LOCK_FILE) -> dict[str, dict[str, str]]:
    if not lock_file.exists():
        return {}
    data = json.loads(lock_file.read_text(encoding="utf-8"))
    if data.get("lockVersion") != LOCK_VERSION:
        raise LockMismatchError(f"{lock_file.name} has an unsupported lockVersion")
    files: dict[str, dict[str, str]] = data["files"]
    return files


def unusable(path: Path) -> str | None:
    """Why ``path`` cannot be locked, or None: it is not JSON, or it is a ``*.schema.json``
    that is not a valid draft 2020-12 schema."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"is not JSON ({exc})"
    if not path.name.endswith(SCHEMA_SUFFIX):
        return None
    try:
        Draft202012Validator.check_schema(document)
    except MetaSchemaError as exc:
        where = "/".join(str(part) for part in exc.path) or "the top level"
        return f"is not a valid draft 2020-12 schema: at {where}, {exc.message}"
    return None


def write_lock(spec_dir: Path = SPEC_DIR, lock_file: Path = LOCK_FILE) -> list[str]:
    """Record the current hashes, keeping existing provenance; return the entries that changed.

    Raises:
        LockMismatchError: a changed or new file cannot be locked (see ``unusable``); the lock
            file is left as it was.
    """
    old = read_lock(lock_file) if lock_file.exists() else {}
    files: dict[str, dict[str, str]] = {}
    paths: dict[str, Path] = {}
    for path in spec_files(spec_dir):
        relative = _relative(path, spec_dir)
        paths[relative] = path
        previous = old.get(relative, {})
        files[relative] = {
            **previous,
            "sha256": sha256_of(path),
            "provenance": previous.get("provenance") or _default_provenance(relative),
        }
    changed = sorted(
        name
        for name in set(old) | set(files)
        if old.get(name, {}).get("sha256") != files.get(name, {}).get("sha256")
    )
    # Files whose bytes are already locked passed this check when they were locked.
    problems = [
        f"spec/{name} {problem}"
        for name in changed
        if name in paths and (problem := unusable(paths[name])) is not None
    ]
    if problems:
        raise LockMismatchError(
            "refusing to lock:\n  "
            + "\n  ".join(problems)
            + "\nFix the file, then run `python -m codegen lock` again; the lock is unchanged."
        )
    # Sorted by name, as ``record_files`` writes it, so neither writer reorders the other's.
    document = {"lockVersion": LOCK_VERSION, "files": dict(sorted(files.items()))}
    lock_file.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return changed


def record_files(
    spec_dir: Path, lock_file: Path, paths: list[Path], provenance: str, facts: dict[str, str]
) -> None:
    """Lock ``paths`` (files under ``spec_dir``) with ``provenance`` and extra ``facts`` (such as
    an ingested release's fingerprint), leaving every other entry as it was.

    Raises:
        LockMismatchError: one of ``paths`` cannot be locked (see ``unusable``); the lock is
            unchanged.
    """
    problems = [
        f"spec/{_relative(path, spec_dir)} {problem}"
        for path in paths
        if (problem := unusable(path)) is not None
    ]
    if problems:
        raise LockMismatchError("refusing to lock:\n  " + "\n  ".join(problems))
    files = read_lock(lock_file)
    for path in paths:
        files[_relative(path, spec_dir)] = {
            "sha256": sha256_of(path),
            "provenance": provenance,
            **facts,
        }
    document = {"lockVersion": LOCK_VERSION, "files": dict(sorted(files.items()))}
    lock_file.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def verify_lock(spec_dir: Path = SPEC_DIR, lock_file: Path = LOCK_FILE) -> None:
    """Raise LockMismatchError unless every spec file matches the lock and vice versa."""
    locked = read_lock(lock_file)
    present = {_relative(p, spec_dir): p for p in spec_files(spec_dir)}
    problems: list[str] = []
    for name, path in present.items():
        entry = locked.get(name)
        if entry is None:
            problems.append(f"spec/{name} is not in spec/lock.json")
        elif entry["sha256"] != sha256_of(path):
            problems.append(
                f"spec/{name} changed since it was locked "
                f"(locked {entry['sha256'][:12]}, now {sha256_of(path)[:12]})"
            )
    problems.extend(
        f"spec/lock.json lists spec/{name}, which does not exist"
        for name in sorted(set(locked) - set(present))
    )
    if problems:
        raise LockMismatchError(
            "refusing to generate from unlocked inputs:\n  "
            + "\n  ".join(problems)
            + "\nReview the spec change, then record it with `python -m codegen lock`."
        )
