"""What a trace keeps of a frame: secrets never, text only as a size and a hash unless asked.

Contract: ``Redactor.frame(raw)`` is the JSON value a trace records for one JSON-RPC frame.
Always: the values under secret members (``env``, ``headers``, names like keys, tokens,
passwords, cookies) become ``[redacted]`` (an ``env`` or ``headers`` list keeps its names),
every other string has the process's secret values, the editor's MCP secrets, bearer tokens and
URL credentials removed (``muse_acp.redact``), and the home folder is written ``~``. In
``redacted`` mode every string that is not an identifier (a protocol member's value such as a
method, a kind, an id; see ``_keeps``) becomes ``PLACEHOLDER``'s ``[text N bytes #hash]``: the same
text gives the same placeholder, so the structure of a session survives, and a placeholder is
kept as it is, so redacting twice equals redacting once. An unreadable frame is recorded as its
size; JSON held in a string is redacted inside it. Pure: no I/O (the writer process runs it).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pydantic_core import from_json

from muse_acp.config import TraceSetting
from muse_acp.redact import REDACTED, SESSION_SECRETS, SecretRegistry, looks_like_credential, redact
from muse_acp.rpc import JsonValue

__all__ = ["PLACEHOLDER", "Redactor", "is_placeholder"]

PLACEHOLDER: Final = re.compile(r"\[text \d+ bytes #[0-9a-f]{12}\]")
"""What redacted text is replaced with: its size in UTF-8 and the start of its SHA-256."""

_SECRET_MEMBER: Final = re.compile(
    r"(?:env|headers|authorization|cookie|password|passwd|secret|token|api_?key|credentials?)\Z"
    r"|(?:key|token|secret|password)\Z",
    re.IGNORECASE,
)
_TEXT_MEMBERS: Final = frozenset(
    {"text", "content", "data", "delta", "newText", "oldText", "output", "title", "message",
     "description", "prompt", "command", "arguments", "args", "rawInput", "rawOutput", "diff",
     "email", "user", "account"}
)  # fmt: skip
_IDENTIFIER: Final = re.compile(r"[A-Za-z0-9_.:/+-]{1,64}")
_SECRET_MIN: Final = 6
_MAY_HOLD_CREDENTIALS: Final = re.compile(r"://|=|bearer", re.IGNORECASE)
"""What ``muse_acp.redact``'s patterns (URL credentials, secret queries, bearer tokens) need."""
_REMEMBERED: Final = 8192
_REMEMBERED_LENGTH: Final = 128


def is_placeholder(text: str) -> bool:
    """``text`` is a whole placeholder of redacted text."""
    return PLACEHOLDER.fullmatch(text) is not None


def _secret_value(value: JsonValue) -> JsonValue:
    """The value of a secret member as recorded."""
    if isinstance(value, list):
        # ACP's ``env`` and ``headers``: a list of {name, value}; the names are no secret.
        return [
            {k: (v if k == "name" else REDACTED) for k, v in item.items()}
            if isinstance(item, dict)
            else REDACTED
            for item in value
        ]
    if isinstance(value, dict):
        return {name: REDACTED for name in value}
    return REDACTED if isinstance(value, str) else value


def _placeholder(text: str) -> str:
    encoded = text.encode("utf-8", "surrogatepass")
    return f"[text {len(encoded)} bytes #{hashlib.sha256(encoded).hexdigest()[:12]}]"


class Redactor:
    """Redacts frames for one trace (see the module contract)."""

    def __init__(
        self,
        mode: TraceSetting,
        environ: Mapping[str, str],
        *,
        home: str | None = None,
        registry: SecretRegistry | None = None,
    ) -> None:
        self.mode = mode
        self._environ = environ
        self._registry = SESSION_SECRETS if registry is None else registry
        home_path = home if home is not None else str(Path.home())
        self._home = home_path.rstrip("/") if len(home_path) > 1 else None
        self._secrets: list[str] = []
        self._empty = SecretRegistry()
        self._secret_keys: dict[str, bool] = {}
        self._known: dict[tuple[str, str], str] = {}
        self._hashed = _TEXT_MEMBERS if mode == "redacted" else frozenset()

    def refresh(self) -> None:
        """Learn the secrets known now (the editor's MCP secrets arrive with its sessions)."""
        values = {
            value
            for name, value in self._environ.items()
            if _SECRET_MEMBER.search(name) and len(value) >= _SECRET_MIN
        }
        values.update(v for v in self._registry.values() if len(v) >= _SECRET_MIN)
        secrets = sorted(values, key=len, reverse=True)
        if secrets != self._secrets:
            self._secrets = secrets
            self._known.clear()

    def frame(self, raw: bytes) -> JsonValue:
        """The recorded form of one frame (see the module contract)."""
        try:
            message = from_json(raw)
        except ValueError:
            return {"unreadable": len(raw)}
        return self.value(message, "")

    def value(self, value: JsonValue, member: str) -> JsonValue:
        """``value`` as recorded when it is the value of ``member`` (``""`` at the top)."""
        kind = type(value)
        if kind is str:
            return self._string(value, member)  # type: ignore[arg-type]
        if kind is list:
            return [self.value(item, member) for item in value]  # type: ignore[union-attr]
        if kind is not dict:
            return value
        out: dict[str, JsonValue] = {}
        secret_keys = self._secret_keys
        known = self._known
        for key, item in value.items():  # type: ignore[union-attr]
            secret = secret_keys.get(key)
            if secret is None:
                secret = secret_keys[key] = _SECRET_MEMBER.search(key) is not None
            if secret:
                out[key] = _secret_value(item)
            elif type(item) is str:
                got = known.get((item, key))
                out[key] = got if got is not None else self._string(item, key)
            elif type(item) is dict or type(item) is list:
                out[key] = self.value(item, key)
            else:
                out[key] = item
        return out

    def secret_member(self, key: str) -> bool:
        """A member or variable of that name holds a secret."""
        known = self._secret_keys.get(key)
        if known is None:
            known = self._secret_keys[key] = _SECRET_MEMBER.search(key) is not None
        return known

    def text(self, text: str, member: str) -> str:
        """``text`` as recorded when it is the value of ``member``."""
        return REDACTED if self.secret_member(member) else self._string(text, member)

    def _string(self, text: str, member: str) -> str:
        # The same short values (ids, methods, kinds) come in nearly every frame: remembered;
        # text (each delta its own) is not, so it does not push them out.
        if member in self._hashed and text and text[0] not in "{[" and not is_placeholder(text):
            return _placeholder(text)
        if len(text) > _REMEMBERED_LENGTH:
            return self._redacted(text, member)
        key = (text, member)
        known = self._known.get(key)
        if known is None:
            if len(self._known) >= _REMEMBERED:
                self._known.clear()
            known = self._known[key] = self._redacted(text, member)
        return known

    def _redacted(self, text: str, member: str) -> str:
        if not text or is_placeholder(text):
            return text  # an empty text says something a placeholder would not
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            # JSON in a string (a tool's arguments): redacted inside, so it still parses.
            try:
                inner = json.loads(text)
            except (ValueError, RecursionError):
                inner = None
            if isinstance(inner, (dict, list)):
                return json.dumps(self.value(inner, member), ensure_ascii=False)
        if self.mode == "redacted" and not self._keeps(text, member):
            return _placeholder(text)
        return self.plain(text)

    def plain_value(self, value: JsonValue) -> JsonValue:
        """``value`` with ``plain`` applied to each of its strings (muse-acp's own words)."""
        if isinstance(value, str):
            return self.plain(value)
        if isinstance(value, list):
            return [self.plain_value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.plain_value(item) for key, item in value.items()}
        return value

    def plain(self, text: str) -> str:
        """``text`` without secrets and with ``~`` for the home folder, its words otherwise
        kept (a log line, already redacted as logs are)."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if _MAY_HOLD_CREDENTIALS.search(text):
            text = redact(text, environ={}, limit=len(text) + 64, registry=self._empty)
        if self._home is not None and self._home in text:
            text = re.sub(re.escape(self._home) + r"(?=/|\b|$)", "~", text)
        return text

    def _keeps(self, text: str, member: str) -> bool:
        """An identifier, kept in redacted mode: the structure a replay checks is made of them."""
        if member in _TEXT_MEMBERS or _IDENTIFIER.fullmatch(text) is None:
            return False
        return "/" in text or not looks_like_credential(text)
