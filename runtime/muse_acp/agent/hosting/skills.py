"""Muse's skills catalog: ``muse skills list --json``, read with bounded time and output.

Used by ``/skills`` (a readable list) and by the command advertisement (skills whose
activation is on become commands). Every failure becomes ``SkillsUnavailable`` with a reason
fit to show the user; the command's stderr is never read into a reply, since it is unbounded
and may quote secrets.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import anyio

from muse_acp.agent.hosting.starting import Hosting
from muse_acp.redact import redact
from muse_acp.rpc import RpcError
from muse_acp.text import one_line

__all__ = [
    "MAX_SKILLS_SHOWN",
    "SKILLS_FRESH",
    "Skill",
    "SkillsCatalog",
    "SkillsUnavailable",
    "list_skills",
    "parse_skills",
    "skills_reply",
]

MAX_SKILLS_SHOWN: Final = 200
"""Most skills listed by ``/skills`` and advertised as commands."""
DESCRIPTION_LIMIT: Final = 200
"""Longest skill description shown or advertised, in characters."""
SKILL_ID_LIMIT: Final = 128
SKILLS_TIMEOUT: Final = 15.0
"""Seconds ``muse skills list`` may take."""
SKILLS_FRESH: Final = 30.0
"""Seconds a workspace's listing is reused for command advertisements."""
SKILLS_OUTPUT_LIMIT: Final = 1024 * 1024
"""Bytes of ``muse skills list`` output read; a longer listing is refused, not cut."""
REASON_LIMIT: Final = 500


@dataclass(frozen=True, slots=True)
class Skill:
    """One entry of Muse's skills catalog."""

    id: str
    description: str
    scope: str
    activation: str


class SkillsUnavailable(Exception):
    """The skills catalog could not be read; the message says why."""


def _fold(text: str, limit: int) -> str:
    return one_line(text, limit)


def parse_skills(raw: bytes) -> tuple[Skill, ...]:
    """The skills in ``muse skills list --json`` output; rows without an id are skipped.

    Raises:
        SkillsUnavailable: the output is not a JSON object with a ``skills`` array.
    """
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise SkillsUnavailable("Muse's skills listing is not JSON") from None
    rows = document.get("skills") if isinstance(document, dict) else None
    if not isinstance(rows, list):
        raise SkillsUnavailable("Muse's skills listing has no skills array")

    def member(row: Mapping[str, object], key: str, limit: int) -> str:
        value = row.get(key)
        return _fold(value, limit) if isinstance(value, str) else ""

    return tuple(
        Skill(
            row["id"],
            member(row, "description", DESCRIPTION_LIMIT),
            member(row, "scope", 40),
            member(row, "activation", 40),
        )
        for row in rows
        if isinstance(row, dict) and isinstance(row.get("id"), str) and row["id"].strip()
    )


async def list_skills(
    hosting: Hosting, cwd: str, *, budget: float = SKILLS_TIMEOUT
) -> tuple[Skill, ...]:
    """Muse's skills catalog for workspace ``cwd`` (``muse skills list --json``).

    Raises:
        SkillsUnavailable: Muse is missing, the command failed or ran out of time, or its
            output was too large or not a skills listing.
    """
    try:
        binary = await hosting.muse()
        argv = [binary.path, "skills", "list", "--json", "--workspace", cwd]
        # stderr is never shown: it is unbounded and may quote secrets the reply must not carry.
        done = await hosting.startup.launcher.run(
            argv, cwd=cwd, env=hosting.environ, budget=budget, limit=SKILLS_OUTPUT_LIMIT
        )
    except RpcError as error:
        raise SkillsUnavailable(
            redact(" ".join(error.message.split()), environ=hosting.environ, limit=REASON_LIMIT)
        ) from None
    except OSError as error:
        raise SkillsUnavailable(f"`muse skills list` could not be started ({error})") from None
    if done.overflowed:
        raise SkillsUnavailable(f"the listing exceeds {SKILLS_OUTPUT_LIMIT} bytes")
    if done.status is None:
        raise SkillsUnavailable(f"`muse skills list` took over {budget:g} seconds")
    if done.status != 0:
        raise SkillsUnavailable(
            f"`muse skills list` exited with status {done.status}; run it in a terminal to see why"
        )
    return parse_skills(done.stdout)


def skills_reply(skills: Sequence[Skill]) -> str:
    """The ``/skills`` answer: one line per skill, at most ``MAX_SKILLS_SHOWN`` of them."""
    if not skills:
        return "Muse reports no skills for this workspace."
    lines = [f"Muse skills for this workspace ({len(skills)}):"]
    for skill in skills[:MAX_SKILLS_SHOWN]:
        line = f"- {_fold(skill.id, SKILL_ID_LIMIT)} ({skill.scope or 'unknown scope'}; "
        line += f"activation {skill.activation or 'unknown'})"
        lines.append(f"{line}: {skill.description}" if skill.description else line)
    if len(skills) > MAX_SKILLS_SHOWN:
        lines.append(f"…and {len(skills) - MAX_SKILLS_SHOWN} more, not shown.")
    return "\n".join(lines)


class SkillsCatalog:
    """Listings per workspace, reused for ``SKILLS_FRESH`` seconds: sessions opened together in
    one workspace (an editor restoring its threads) share one ``muse skills list``."""

    def __init__(self, hosting: Hosting) -> None:
        self._hosting = hosting
        self._listings: dict[str, tuple[float, tuple[Skill, ...]]] = {}
        self._locks: dict[str, anyio.Lock] = {}

    async def listing(self, cwd: str, *, fresh: bool = False) -> tuple[Skill, ...]:
        """The skills of workspace ``cwd``; ``fresh`` always runs the listing again.

        Raises:
            SkillsUnavailable: as ``list_skills``.
        """
        lock = self._locks.setdefault(cwd, anyio.Lock())
        async with lock:
            kept = self._listings.get(cwd)
            now = anyio.current_time()
            if kept is not None and not fresh and now - kept[0] < SKILLS_FRESH:
                return kept[1]
            skills = await list_skills(self._hosting, cwd)
            self._listings[cwd] = (anyio.current_time(), skills)
            return skills
