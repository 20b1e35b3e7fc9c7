"""Bounded text: the one place where muse-acp shortens what it shows.

Contract (pure): every cut ends in the one marker ``ELLIPSIS`` ("…") and never splits a
character. ``clip`` bounds characters; ``one_line`` folds all whitespace (line breaks included)
into single spaces, then clips; ``quoted`` is a bounded ``repr`` for quoting a peer's value in a
message; ``cut_utf8`` bounds UTF-8 bytes without a marker (callers that cut bytes say so in a
note of their own) and ``utf8_size`` measures them.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ELLIPSIS", "QUOTE_LIMIT", "clip", "cut_utf8", "one_line", "quoted", "utf8_size"]

ELLIPSIS: Final = "…"
QUOTE_LIMIT: Final = 80
"""Longest part of a peer's value quoted back in a message, by default."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``ELLIPSIS`` when cut."""
    if limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    if len(text) <= limit:
        return text
    if limit < 1:
        return ""
    return text[: limit - 1] + ELLIPSIS


def one_line(text: str, limit: int) -> str:
    """``text`` folded onto one line (runs of whitespace become one space), then clipped."""
    folded = " ".join(text.split())
    if len(folded) <= limit:
        return folded
    if limit < 1:
        return ""
    return folded[: limit - 1].rstrip() + ELLIPSIS


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """A bounded ``repr`` of ``value`` (strings are clipped before they are quoted)."""
    return repr(clip(value, limit)) if isinstance(value, str) else clip(repr(value), limit)


def utf8_size(text: str) -> int:
    """The UTF-8 size of ``text``; a lone surrogate (JSON text may hold one) counts as 1 byte."""
    if text.isascii():  # known without a scan: one byte a character, no copy needed
        return len(text)
    return len(text.encode("utf-8", errors="replace"))


def cut_utf8(text: str, limit_bytes: int) -> tuple[str, bool]:
    """The longest prefix of ``text`` that fits ``limit_bytes`` of UTF-8, and whether it is
    shorter than ``text``. A cut never splits a character."""
    if len(text) * 4 <= limit_bytes:
        return text, False
    if text.isascii():  # one byte a character: cut without encoding a copy
        return (text, False) if len(text) <= limit_bytes else (text[:limit_bytes], True)
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) <= limit_bytes:
        return text, False
    return encoded[:limit_bytes].decode("utf-8", errors="ignore"), True
