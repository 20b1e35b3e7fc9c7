"""Session titles: the one a user chooses with ``/rename``, and the one shown for a session.

Contract: ``check_user_title`` accepts a free-text title (trimmed, one line, 1 to
``MAX_TITLE_LENGTH`` characters, no control characters) or raises ``RpcError``
``INVALID_PARAMS`` saying what to change; ``title_problem`` is the same rule as a reason
string, for titles read back from disk. ``display_title`` picks what a client shows: the user's
title wins over everything Muse reports, then Muse's ``title``, its slug ``name``, and finally
the session's first prompt folded onto one line and cut to ``PROMPT_TITLE_LENGTH`` characters.
Muse's own ``session/rename`` only takes slug names, so user titles never go to Muse; they are
kept by the adapter (see ``preferences``). Pure functions.
"""

from __future__ import annotations

import unicodedata
from typing import Final

from muse_acp.rpc.errors import INVALID_PARAMS, RpcError
from muse_acp.text import one_line
from muse_acp_wire import msp

__all__ = [
    "MAX_TITLE_LENGTH",
    "PROMPT_TITLE_LENGTH",
    "check_user_title",
    "display_title",
    "named_title",
    "title_problem",
]

MAX_TITLE_LENGTH: Final = 512
"""Longest user title, in characters, after trimming."""
PROMPT_TITLE_LENGTH: Final = 80
"""Longest title derived from a first prompt, ellipsis included."""
HOST_TITLE_LENGTH: Final = 256
"""Muse's own titles are folded onto one line and cut to this many characters."""

# Cc covers C0, DEL and C1 controls (line feeds and tabs included); Zl and Zp are the Unicode
# line and paragraph separators, which would break a title over several lines just the same.
_FORBIDDEN_CATEGORIES: Final = frozenset({"Cc", "Zl", "Zp"})


def title_problem(text: str) -> str | None:
    """Why ``text`` (already trimmed) cannot be a user title, or None when it can."""
    if not text:
        return "the title is empty"
    if len(text) > MAX_TITLE_LENGTH:
        return f"the title has {len(text)} characters, more than the {MAX_TITLE_LENGTH} allowed"
    if any(unicodedata.category(char) in _FORBIDDEN_CATEGORIES for char in text):
        return "the title contains a line break or another control character"
    return None


def check_user_title(raw: str | None) -> str:
    """Return ``raw`` trimmed when it is an acceptable user title.

    Raises:
        RpcError: ``INVALID_PARAMS`` when the trimmed title is empty, longer than
            ``MAX_TITLE_LENGTH`` characters, or not a single line of plain text.
    """
    title = (raw or "").strip()
    problem = title_problem(title)
    if problem is not None:
        raise RpcError(
            INVALID_PARAMS,
            f"cannot rename the session: {problem}. Send /rename followed by a title of 1 to "
            f"{MAX_TITLE_LENGTH} characters on a single line",
        )
    return title


def _one_line(text: str, limit: int) -> str | None:
    return one_line(text, limit) or None


def display_title(user_title: str | None, row: msp.Session | None) -> str | None:
    """The title to show for a session: the user's, else Muse's title, name or first prompt."""
    if user_title:
        return user_title
    if row is None:
        return None
    for reported in (row.title, row.name):
        if reported is not None and reported.strip():
            # Host titles are shown as given, but always on one bounded line.
            return _one_line(reported, HOST_TITLE_LENGTH)
    if row.first_user_prompt is None:
        return None
    return _one_line(row.first_user_prompt, PROMPT_TITLE_LENGTH)


def named_title(name: str | None) -> str | None:
    """The title a name Muse gave the session (``session/nameChanged``) shows as, if any."""
    if name is None or not name.strip():
        return None
    return _one_line(name, HOST_TITLE_LENGTH)
