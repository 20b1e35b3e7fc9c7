"""What was sent of one text: its length and a digest, so a snapshot is checked cheaply.

Contract: a ``TextStream`` is told each piece of a text as it is sent (``add``) and, given the
whole text later (a snapshot), says what it adds (``suffix``), or None once the text no longer
extends what was sent: it has diverged, and stays so. It keeps the text's length, a digest and
fewer than ``_UNHASHED_CHARS`` characters not hashed yet, however long the text grows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Final

__all__ = ["TextStream"]


def _digest() -> hashlib.blake2b:
    return hashlib.blake2b(digest_size=16)


_UNHASHED_CHARS: Final = 4096
"""Text sent but not yet hashed, at most (plus one piece): hashing per delta costs more than the
rest of keeping count, and the hash of the pieces joined is the hash of the pieces in turn."""


@dataclass(slots=True)
class TextStream:
    """What was sent of one text: its length and a digest, so state stays small however long
    the text grows; a snapshot is checked by hashing its prefix of the same length."""

    chars: int = 0
    digest: hashlib.blake2b = field(default_factory=_digest)
    diverged: bool = False
    unhashed: list[str] = field(default_factory=list)
    """The latest pieces, not yet in ``digest`` (fewer than ``_UNHASHED_CHARS`` characters)."""
    unhashed_chars: int = 0

    def add(self, text: str) -> None:
        self.chars += len(text)
        self.unhashed.append(text)
        self.unhashed_chars += len(text)
        if self.unhashed_chars >= _UNHASHED_CHARS:
            self.compact()

    def compact(self) -> None:
        """Fold the pieces not hashed yet into the digest (an ended text keeps no text)."""
        if self.unhashed:
            joined = "".join(self.unhashed)
            self.digest.update(joined.encode("utf-8", errors="surrogatepass"))
            self.unhashed.clear()
            self.unhashed_chars = 0

    def suffix(self, text: str) -> str | None:
        """The part of ``text`` not sent yet, or None when ``text`` does not extend it."""
        if self.diverged:
            return None
        self.compact()
        if self.chars:
            prefix = text[: self.chars].encode("utf-8", errors="surrogatepass")
            if len(text) < self.chars or (
                hashlib.blake2b(prefix, digest_size=16).digest() != self.digest.digest()
            ):
                self.diverged = True
                return None
        return text[self.chars :]
