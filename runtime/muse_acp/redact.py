"""Removing secrets from text before it leaves the adapter, and bounding its length.

Contract: ``redact(text)`` returns ``text`` with every secret form below replaced by
``[redacted]`` and the result cut to at most ``limit`` characters (a cut ends with the
``muse_acp.text`` ellipsis). Secret forms:

* the value of any environment variable whose name ends in ``KEY``, ``TOKEN``, ``SECRET``,
  ``PASSWORD``, ``CREDENTIAL`` or ``CREDENTIALS`` (any case; ``META_API_KEY`` included), when
  the value has at least six characters (shorter values would match ordinary words);
* an HTTP ``Bearer`` token;
* the userinfo of a URL (``https://user:pass@host`` becomes ``https://[redacted]@host``);
* the values of the query parameters ``api_key``, ``key``, ``token`` and ``access_token``.

Ordinary text passes through unchanged, and redacting twice gives the same result as once.
``RedactingFilter`` applies the same rules to log records, so the stderr log never carries what
the wire may not. This module does no I/O; it only reads the process environment when no
``environ`` is given.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Final

from muse_acp.text import clip

__all__ = [
    "DEFAULT_LIMIT",
    "REDACTED",
    "RedactingFilter",
    "redact",
]

REDACTED: Final = "[redacted]"
DEFAULT_LIMIT: Final = 4096
MIN_SECRET_LENGTH: Final = 6

_SECRET_NAME: Final = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)\Z", re.IGNORECASE)
# RFC 6750 b64token characters; "[" is not one, so an already redacted token stays as it is.
_BEARER: Final = re.compile(r"\b(Bearer)\s+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE)
_URL_USERINFO: Final = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#@]+@")
_SECRET_QUERY: Final = re.compile(
    r"([?&](?:api_key|key|token|access_token)=)[^&#\s\"'<>]+", re.IGNORECASE
)


def _secret_values(environ: Mapping[str, str]) -> list[str]:
    values = {
        value
        for name, value in environ.items()
        if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
    }
    # Longest first, so a secret that contains another is replaced whole.
    return sorted(values, key=len, reverse=True)


def redact(
    text: str, *, environ: Mapping[str, str] | None = None, limit: int = DEFAULT_LIMIT
) -> str:
    """Return ``text`` with secrets replaced by ``[redacted]``, cut to ``limit`` characters.

    ``environ`` defaults to the process environment.
    """
    for value in _secret_values(os.environ if environ is None else environ):
        text = text.replace(value, REDACTED)
    text = _BEARER.sub(rf"\1 {REDACTED}", text)
    text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _SECRET_QUERY.sub(rf"\1{REDACTED}", text)
    return clip(text, limit)


class RedactingFilter(logging.Filter):
    """A log filter that redacts each record's final message and its exception text.

    It renders the message (``msg % args``) once, redacts it and stores the result with no
    arguments left, so handlers after it format the redacted text. Attach it to the handler
    that writes to stderr.
    """

    def __init__(
        self, *, environ: Mapping[str, str] | None = None, limit: int = DEFAULT_LIMIT
    ) -> None:
        super().__init__()
        self._environ = environ
        self._limit = limit
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage(), environ=self._environ, limit=self._limit)
        record.args = None
        # Exception messages often quote the URL or header that failed, credentials included.
        if record.exc_info is not None and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, environ=self._environ, limit=self._limit)
        return True
