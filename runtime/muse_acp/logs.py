"""Logging for every muse-acp process: stderr only, redacted, level from flag or environment.

stdout belongs to the protocol, so the only handler writes to stderr. Every record passes the
redacting filter, so a secret that reaches a log message (an exported key, a bearer token, URL
credentials) is replaced before it is written.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Final

from muse_acp.redact import RedactingFilter

LOG_VARIABLE: Final = "MUSE_ACP_LOG"
LEVELS: Final = ("debug", "info", "warning", "error")


def configure_logging(level: str | None = None) -> None:
    """Send muse-acp's logs to stderr at ``level`` (else ``MUSE_ACP_LOG``, else warning)."""
    chosen = (level or os.environ.get(LOG_VARIABLE) or "warning").lower()
    if chosen not in LEVELS:
        chosen = "warning"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("muse-acp %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(chosen.upper())
