"""Removing secrets from text before it leaves the adapter, and bounding its length.

Contract: ``redact(text)`` returns ``text`` with every secret replaced by ``[redacted]`` and cut
to at most ``limit`` characters. Secrets are: values of environment variables named like keys,
tokens, secrets, passwords or credentials, and values given as secrets (``SESSION_SECRETS``:
the editor's MCP settings), both when at least six characters long; HTTP ``Bearer`` tokens; a
URL's userinfo and its ``api_key``, ``key``, ``token`` and ``access_token`` query values. Of MCP
settings, an env value is given when its name looks secret or the value looks like a credential
(``looks_like_credential``: 16+ characters, no whitespace, letters and digits, no path or plain
URL), a header value when its name is an auth, cookie, key, token, secret, session or password
one or its last word looks like a credential. A given value is also matched percent-encoded
and, when it spans lines or words, collapsed and line by line. Redacting twice equals redacting
once. ``RedactingFilter`` does the same to log records; ``SecretRegistry`` keeps at most
``MAX_REMEMBERED`` values, oldest first out, thread-safe. No I/O beyond reading the environment.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Final
from urllib.parse import quote, unquote, unquote_plus, urlsplit

from muse_acp.text import clip

__all__ = [
    "CREDENTIAL_LENGTH",
    "DEFAULT_LIMIT",
    "MAX_REMEMBERED",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SESSION_SECRETS",
    "RedactingFilter",
    "SecretRegistry",
    "env_secrets",
    "header_secrets",
    "looks_like_credential",
    "redact",
    "secret_arguments",
    "url_secrets",
]

REDACTED: Final = "[redacted]"
DEFAULT_LIMIT: Final = 4096
MIN_SECRET_LENGTH: Final = 6
CREDENTIAL_LENGTH: Final = 16
"""Fewest characters of a value taken as a credential by its looks alone."""
MAX_REMEMBERED: Final = 1024
"""Most secret values a ``SecretRegistry`` keeps (a few per MCP server is the usual)."""

_SECRET_NAME: Final = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)\Z", re.IGNORECASE)
# RFC 6750 b64token characters; "[" is not one, so an already redacted token stays as it is.
_BEARER: Final = re.compile(r"\b(Bearer)\s+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE)
_URL_USERINFO: Final = re.compile(r"\b([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#@]+@")
_SECRET_QUERY: Final = re.compile(
    r"([?&](?:api_key|key|token|access_token)=)[^&#\s\"'<>]+", re.IGNORECASE
)
_SECRET_OPTION: Final = re.compile(
    r"(?:key|token|secret|passw(?:or)?d|pwd|credentials?|auth|authorization|cookie|signature)\Z",
    re.IGNORECASE,
)
"""A command-line option, ``NAME=value`` or header name whose value is a secret, by its end."""
_SECRET_HEADER: Final = re.compile(
    r"auth|cookie|key|token|secret|session|passw(?:or)?d|credential", re.IGNORECASE
)
"""A header whose value is a secret, by its name (``Authorization`` and ``Proxy-...`` too)."""
_WINDOWS_PATH: Final = re.compile(r"[A-Za-z]:[\\/]")
_NAME: Final = re.compile(r"-{0,2}[A-Za-z][A-Za-z0-9_.-]*")
_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>]+")


class SecretRegistry:
    """Secret values ``redact`` replaces wherever they appear (see the module contract)."""

    def __init__(self, capacity: int = MAX_REMEMBERED) -> None:
        self._capacity = capacity
        self._values: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._ordered: tuple[str, ...] = ()
        """Longest first; replaced whole on each change, so readers need no lock."""

    def remember(self, values: Iterable[str]) -> None:
        """Treat each of ``values`` (the long enough ones) as a secret from now on."""
        with self._lock:
            for value in values:
                for said in _forms(value):
                    for form in (said, json.dumps(said)[1:-1]):  # as said, and as JSON quotes it
                        if len(form) >= MIN_SECRET_LENGTH:
                            self._values[form] = None
                            self._values.move_to_end(form)
            while len(self._values) > self._capacity:
                self._values.popitem(last=False)
            self._ordered = tuple(sorted(self._values, key=len, reverse=True))

    def values(self) -> tuple[str, ...]:
        """The secrets kept, longest first."""
        return self._ordered


def _forms(value: str) -> list[str]:
    """The ways a message may quote ``value``: as it is, percent-encoded, and for a value with
    whitespace (a PEM key, a passphrase) with its whitespace collapsed, each of its lines, and
    each of its words that is not plain letters (a line of a key; not a word like ``PRIVATE``)."""
    forms = [value, quote(value, safe="")]
    if any(c.isspace() for c in value):
        forms += [" ".join(value.split()), *(line.strip() for line in value.splitlines())]
        forms += [w for w in value.split() if not w.strip("-").isalpha()]
    return forms


SESSION_SECRETS: Final = SecretRegistry()
"""The process's secrets given by its clients (the MCP servers of every session)."""


def _secret_name(text: str) -> bool:
    """``text`` is an option, variable or header name that says its value is a secret."""
    return _NAME.fullmatch(text) is not None and _SECRET_OPTION.search(text) is not None


def looks_like_credential(value: str) -> bool:
    """``value`` reads as a credential: at least ``CREDENTIAL_LENGTH`` characters with no
    whitespace, mixing letters and digits, and neither a file system path nor a URL (whose
    credentials, if any, ``url_secrets`` finds)."""
    if len(value) < CREDENTIAL_LENGTH or any(c.isspace() for c in value):
        return False
    if value.startswith(("/", "~", "./", "../")) or _WINDOWS_PATH.match(value):
        return False
    if _URL.fullmatch(value):
        return False
    return any(c.isalpha() for c in value) and any(c.isdigit() for c in value)


def env_secrets(name: str, value: str) -> list[str]:
    """The secrets of one environment variable given to a server: its value when its name looks
    secret (the rule the process environment follows) or the value looks like a credential,
    and the credentials of a URL in it."""
    secret = _SECRET_NAME.search(name) is not None or looks_like_credential(value)
    return ([value] if secret else []) + url_secrets(value)


def header_secrets(name: str, value: str) -> list[str]:
    """The secrets of one HTTP header: its value and last word (the token of ``Bearer X``) when
    its name is an authorization or cookie header or looks secret, or that word looks like a
    credential; else only the credentials of a URL in it."""
    last = value.split()[-1:]
    if _SECRET_HEADER.search(name) or any(looks_like_credential(word) for word in last):
        return [value, *last]
    return url_secrets(value)


def secret_arguments(args: Sequence[str]) -> list[str]:
    """The secrets in a command line: the values of ``--token=V``, ``--api-key V``,
    ``API_KEY=V`` and ``Authorization: V`` forms (and the credentials of URLs in it); what
    follows a ``--no-...`` option or starts with ``-`` is an option, not a value."""
    found: list[str] = []
    for index, arg in enumerate(args):
        found += url_secrets(arg)
        for separator in ("=", ":"):
            name, sep, value = arg.partition(separator)
            if sep and _secret_name(name):
                found += [value.strip(), *value.split()[-1:]]
        following = args[index + 1] if index + 1 < len(args) else ""
        # ``--no-auth --transport`` turns a feature off: what follows is the next option.
        no_value = arg.lower().startswith("--no-") or following.startswith("-")
        if arg.startswith("-") and _secret_name(arg) and not no_value:
            found += [following, *following.split()[-1:]]
    return found


def url_secrets(text: str) -> list[str]:
    """The credentials of each URL in ``text``: its userinfo (and password) and the values of
    its query parameters whose names say they are secrets."""
    found: list[str] = []
    for match in _URL.finditer(text):
        try:
            parts = urlsplit(match.group())
        except ValueError:
            continue
        userinfo, at, _ = parts.netloc.rpartition("@")
        if at:
            for part in (userinfo, parts.password, parts.username):
                found += [part, unquote(part)] if part else []
        for pair in parts.query.split("&"):
            name, equals, value = pair.partition("=")
            if equals and value and _secret_name(unquote_plus(name)):
                found += [value, unquote_plus(value)]  # as the URL spells it, and decoded
    return found


def _secret_values(environ: Mapping[str, str], registry: SecretRegistry) -> list[str]:
    values = {
        value
        for name, value in environ.items()
        if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
    }
    values.update(registry.values())
    # Longest first, so a secret that contains another is replaced whole.
    return sorted(values, key=len, reverse=True)


def redact(
    text: str,
    *,
    environ: Mapping[str, str] | None = None,
    limit: int = DEFAULT_LIMIT,
    registry: SecretRegistry | None = None,
) -> str:
    """Return ``text`` with secrets replaced by ``[redacted]``, cut to ``limit`` characters.

    ``environ`` defaults to the process environment, ``registry`` to ``SESSION_SECRETS``.
    """
    chosen = SESSION_SECRETS if registry is None else registry
    for value in _secret_values(os.environ if environ is None else environ, chosen):
        if value in text:
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
        self,
        *,
        environ: Mapping[str, str] | None = None,
        limit: int = DEFAULT_LIMIT,
        registry: SecretRegistry | None = None,
    ) -> None:
        super().__init__()
        self._environ = environ
        self._limit = limit
        self._registry = registry
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self._redact(record.getMessage())
        record.args = None
        # Exception messages often quote the URL or header that failed, credentials included.
        if record.exc_info is not None and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        return True

    def _redact(self, text: str) -> str:
        return redact(text, environ=self._environ, limit=self._limit, registry=self._registry)
