"""Logging for every muse-acp process: stderr only, redacted, level from flag or environment.

stdout belongs to the protocol, so the only handler writes to stderr. Every record passes the
redacting filter, so a secret that reaches a log message (an exported key, a bearer token, URL
credentials, the editor's MCP server secrets a host's stderr quotes) is replaced before it is
written. A level that is not one of ``LEVELS``, from the
flag or from ``MUSE_ACP_LOG``, is refused with a ``ConfigError`` that names where it came from.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Final

from muse_acp.config import ConfigError
from muse_acp.redact import RedactingFilter

LOG_VARIABLE: Final = "MUSE_ACP_LOG"
LEVELS: Final = ("debug", "info", "warning", "error")
DEFAULT_LEVEL: Final = "warning"


def check_level(text: str, source: str) -> str:
    """``text`` as a level name, or a ConfigError saying which ``source`` held what."""
    level = text.strip().lower()
    if level not in LEVELS:
        raise ConfigError(f"{source} must be one of {', '.join(LEVELS)}, got {text!r}")
    return level


def resolve_level(level: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The level to use: ``level`` (from ``--log-level``), else ``MUSE_ACP_LOG``, else warning.

    Raises:
        ConfigError: the chosen value is not a level name.
    """
    if level:
        return check_level(level, "--log-level")
    configured = (os.environ if environ is None else environ).get(LOG_VARIABLE)
    if configured:
        return check_level(configured, LOG_VARIABLE)
    return DEFAULT_LEVEL


def configure_logging(level: str | None = None) -> None:
    """Send muse-acp's logs to stderr at ``level`` (else ``MUSE_ACP_LOG``, else warning).

    Raises:
        ConfigError: the level, or ``MUSE_ACP_LOG`` when no level is given, is not a level name.
    """
    chosen = resolve_level(level)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("muse-acp %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(chosen.upper())
