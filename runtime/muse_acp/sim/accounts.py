"""The non-protocol commands of the simulated ``muse`` binary: skills, login and logout.

Contract: ``skills_document`` is the fixed catalog ``muse-sim skills list --json`` prints (three
skills, one with activation ``off``); ``login`` writes a credential file in the state directory
and ``logout`` removes it. They report through return values and exit codes only, like the real
commands a client runs unattended.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["CREDENTIALS_FILE", "SKILLS", "Skill", "login", "logout", "skills_document"]

CREDENTIALS_FILE: Final = "credentials.json"


@dataclass(frozen=True, slots=True)
class Skill:
    """One entry of ``skills list``."""

    id: str
    description: str
    scope: str
    activation: str


SKILLS: Final = (
    Skill("bundled:plan", "Draft a step-by-step plan before changing anything.", "bundled", "on"),
    Skill("bundled:manage-settings", "Inspect and change Muse settings.", "bundled", "on"),
    Skill("workspace:release-notes", "Summarise recent changes as notes.", "workspace", "off"),
)


def skills_document() -> str:
    """The JSON text ``skills list --json`` prints: ``{"skills": [{id, description, ...}]}``."""
    rows = [
        {"id": s.id, "description": s.description, "scope": s.scope, "activation": s.activation}
        for s in SKILLS
    ]
    return json.dumps({"skills": rows}, separators=(",", ":"))


def skills_table() -> str:
    """The human-readable listing printed without ``--json``."""
    return "\n".join(f"{s.id}\t{s.scope}\t{s.activation}\t{s.description}" for s in SKILLS)


def login(home: Path) -> None:
    """Store simulated credentials (replacing any), readable by the owner only."""
    home.mkdir(parents=True, exist_ok=True)
    target = home / CREDENTIALS_FILE
    staging = target.with_suffix(".tmp")
    document = json.dumps({"state": "apiKey", "label": "muse-sim"})
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(document)
    os.replace(staging, target)


def logout(home: Path) -> bool:
    """Remove stored credentials; returns whether there were any."""
    try:
        (home / CREDENTIALS_FILE).unlink()
    except FileNotFoundError:
        return False
    return True
