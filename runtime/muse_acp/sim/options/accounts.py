"""The non-protocol commands of the simulated ``muse`` binary (skills, login and logout), and
the credential they leave behind.

Contract: ``skills_document`` is the fixed catalog ``muse-sim skills list --json`` prints (three
skills, one with activation ``off``); ``login`` writes a credential file in the state directory
(a signed-in account, ``accountLogin``, labelled ``LOGIN_LABEL``) and ``logout`` removes it.
They report through return values and exit codes only, like the real commands a client runs
unattended. ``stored_credential`` reads the file back as the host's ``account/read`` reports
it: its ``state`` (``accountLogin``, or ``apiKey`` for a stored key) and ``label`` (for a stored
key without one, ``STORED_KEY_LABEL``, as real hosts show it); no file, or one that holds
neither state, is no credential. The file never holds key material.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Final, NamedTuple

if TYPE_CHECKING:  # the functions take paths; listing skills needs no pathlib
    from pathlib import Path

__all__ = [
    "API_KEY_ENV",
    "CREDENTIALS_FILE",
    "LOGIN_LABEL",
    "SKILLS",
    "STORED_KEY_LABEL",
    "STORED_STATES",
    "Skill",
    "login",
    "logout",
    "skills_document",
    "skills_table",
    "stored_credential",
]

CREDENTIALS_FILE: Final = "credentials.json"
API_KEY_ENV: Final = "META_API_KEY"
"""The variable whose presence makes the simulated host report the ``envKey`` credential."""
LOGIN_LABEL: Final = "sim-user@muse-sim.invalid"
"""The account identity ``login`` stores and ``account/read`` shows as its label."""
STORED_KEY_LABEL: Final = "stored key"
STORED_STATES: Final = frozenset({"accountLogin", "apiKey"})
"""The credential kinds a credential file may hold."""


class Skill(NamedTuple):
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
    document = json.dumps({"state": "accountLogin", "label": LOGIN_LABEL})
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


def stored_credential(home: Path) -> tuple[str, str | None] | None:
    """The stored credential's ``(state, label)``, or None when there is none (see the module
    contract); an unreadable file counts as none."""
    try:
        document = json.loads((home / CREDENTIALS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("state") not in STORED_STATES:
        return None
    state = str(document["state"])
    label = document.get("label")
    if isinstance(label, str) and label.strip():
        return state, label
    return state, STORED_KEY_LABEL if state == "apiKey" else None
