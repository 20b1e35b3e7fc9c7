"""Where the recorded MSP traffic is, for the tests that compare the simulator with it.

The folder defaults to ``<repo root>/../shared/reference/msp-captures`` and can be moved with
``MUSE_ACP_MSP_CAPTURES``. It is not part of the repository: tests that need it skip, saying
why, when it is absent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
CAPTURES_ENV: Final = "MUSE_ACP_MSP_CAPTURES"
RAW_LOGS: Final = "latekaapi-baaz"
TRANSCRIPTS: Final = "official-transcripts"


def captures_root() -> Path:
    configured = os.environ.get(CAPTURES_ENV, "")
    if configured:
        return Path(configured)
    return REPO_ROOT.parent / "shared" / "reference" / "msp-captures"


def raw_logs() -> dict[str, Path]:
    """Real host logs (``--> `` client line, ``<-- `` host line) by file stem."""
    folder = captures_root() / RAW_LOGS
    if not folder.is_dir():
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.jsonl"))}


def official_transcripts() -> dict[str, Path]:
    """Official ``{"dir","raw"}`` transcripts by scenario name."""
    folder = captures_root() / TRANSCRIPTS
    if not folder.is_dir():
        return {}
    return {path.parent.name: path for path in sorted(folder.glob("*/transcript.ndjson"))}


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
