"""Where the recorded MSP traffic is, for the tests that compare the simulator with it.

The repository ships its own small recordings under ``tests/fixtures/msp`` (``raw-logs/*.jsonl``
and ``transcripts/<scenario>/transcript.ndjson``), written to the shapes real hosts use, so the
comparisons run on any clone. A larger collection of recordings, when one is at hand, is read
as well: the folder named by ``MUSE_ACP_MSP_CAPTURES``, else ``msp-captures`` under
``reference`` in the ``shared`` folder beside the repository.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
FIXTURES: Final = REPO_ROOT / "tests" / "fixtures" / "msp"
CAPTURES_ENV: Final = "MUSE_ACP_MSP_CAPTURES"
RAW_LOGS: Final = "latekaapi-baaz"
TRANSCRIPTS: Final = "official-transcripts"


def external_root() -> Path | None:
    """The collection of recordings outside the repository, when there is one."""
    configured = os.environ.get(CAPTURES_ENV, "")
    root = Path(configured) if configured else REPO_ROOT.parent / "shared" / "reference"
    root = root if configured else root / "msp-captures"
    return root if root.is_dir() else None


def raw_logs() -> dict[str, Path]:
    """Host logs (``--> `` client line, ``<-- `` host line) by file stem, the repository's first."""
    folders = [FIXTURES / "raw-logs"]
    external = external_root()
    if external is not None:
        folders.append(external / RAW_LOGS)
    return {path.stem: path for folder in folders for path in sorted(folder.glob("*.jsonl"))}


def official_transcripts() -> dict[str, Path]:
    """``{"dir","raw"}`` transcripts by scenario name, the repository's first."""
    folders = [FIXTURES / "transcripts"]
    external = external_root()
    if external is not None:
        folders.append(external / TRANSCRIPTS)
    return {
        path.parent.name: path
        for folder in folders
        for path in sorted(folder.glob("*/transcript.ndjson"))
    }


def is_external(path: Path) -> bool:
    return not path.is_relative_to(FIXTURES)


@dataclass(frozen=True, slots=True)
class Recorded:
    direction: Literal["client", "server"]
    raw: str
    message: dict[str, Any]


def read_raw_log(path: Path) -> list[Recorded]:
    frames: list[Recorded] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("--> "):
            frames.append(Recorded("client", line[4:], json.loads(line[4:])))
        elif line.startswith("<-- "):
            frames.append(Recorded("server", line[4:], json.loads(line[4:])))
    return frames


def read_transcript(path: Path) -> list[Recorded]:
    frames: list[Recorded] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        raw = entry["raw"].rstrip("\r")
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if isinstance(message, dict):
            frames.append(Recorded(entry["dir"], raw, message))
    return frames


def connections(frames: list[Recorded]) -> list[list[Recorded]]:
    """A recording split where the client starts over with ``initialize``."""
    parts: list[list[Recorded]] = []
    for frame in frames:
        if (
            frame.direction == "client" and frame.message.get("method") == "initialize"
        ) or not parts:
            parts.append([])
        parts[-1].append(frame)
    return parts
