"""Adapter settings: where the Muse executable and the adapter's data live, and every deadline.

Contract: settings come from command-line options first, then ``MUSE_ACP_*`` environment
variables, then defaults; README.md's configuration table lists the variables. A malformed value
is reported when the adapter starts, not when it is first used.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, TypeAlias, TypeGuard, get_args

ENV_MUSE_BIN: Final = "MUSE_ACP_MUSE_BIN"
ENV_DATA_DIR: Final = "MUSE_ACP_DATA_DIR"
ENV_BACKEND: Final = "MUSE_ACP_BACKEND"
ENV_TRUST_NEWER: Final = "MUSE_ACP_TRUST_NEWER_HOST"
ENV_TRACE: Final = "MUSE_ACP_TRACE"
ENV_TRACE_DIR: Final = "MUSE_ACP_TRACE_DIR"
ENV_EVENT_LOOP: Final = "MUSE_ACP_EVENT_LOOP"

BackendSetting: TypeAlias = Literal["auto", "msp", "exec"]
"""How Muse is driven: ``auto`` chooses ``msp`` when the executable has ``serve``, else ``exec``."""
BACKEND_SETTINGS: Final[tuple[BackendSetting, ...]] = get_args(BackendSetting)

TraceSetting: TypeAlias = Literal["off", "redacted", "full"]
"""Whether sessions are traced (``muse_acp.traces``): ``redacted`` hides secrets and replaces
text by sizes and hashes, ``full`` hides secrets alone."""
TRACE_SETTINGS: Final[tuple[TraceSetting, ...]] = get_args(TraceSetting)

EventLoopSetting: TypeAlias = Literal["auto", "asyncio"]
"""The event loop ``serve`` runs on: ``auto`` takes uvloop where it is installed, ``asyncio`` the
standard library's (see ``muse_acp.event_loop``)."""
EVENT_LOOP_SETTINGS: Final[tuple[EventLoopSetting, ...]] = get_args(EventLoopSetting)


class ConfigError(ValueError):
    """A setting has a value the adapter cannot use; the message names it and the fix."""


@dataclass(frozen=True, slots=True)
class Deadlines:
    """Per-phase budgets in seconds (see the module table)."""

    startup: float = 120.0
    submit: float = 30.0
    cancel: float = 5.0
    read: float = 20.0
    idle: float = 60.0
    silence: float = 600.0


_DEADLINE_VARIABLES: Final = {
    "startup": "MUSE_ACP_STARTUP_TIMEOUT",
    "submit": "MUSE_ACP_SUBMIT_TIMEOUT",
    "cancel": "MUSE_ACP_CANCEL_TIMEOUT",
    "read": "MUSE_ACP_READ_TIMEOUT",
    "idle": "MUSE_ACP_IDLE_TIMEOUT",
    "silence": "MUSE_ACP_SILENCE_TIMEOUT",
}


@dataclass(frozen=True, slots=True)
class AdapterConfig:
    """Everything the agent needs to know before its first request."""

    muse_bin: str | None = None
    """Explicit Muse executable (``--muse`` or ``MUSE_ACP_MUSE_BIN``); None searches PATH."""
    data_dir: Path = field(default_factory=lambda: default_data_dir(os.environ))
    deadlines: Deadlines = field(default_factory=Deadlines)
    backend: BackendSetting = "auto"
    """The backend the user asked for (``--backend`` or ``MUSE_ACP_BACKEND``); see ``backends``."""
    trust_newer_host: bool = False
    """Offer the features offered only on verified hosts to a host newer than every verified
    one (``MUSE_ACP_TRUST_NEWER_HOST=1``); see ``host.versions``."""
    trace: TraceSetting = "off"
    """Session traces (``--trace`` or ``MUSE_ACP_TRACE``); see ``muse_acp.traces``."""
    trace_dir: Path | None = None
    """Where traces go (``MUSE_ACP_TRACE_DIR``); None: ``traces`` under ``data_dir``."""
    event_loop: EventLoopSetting = "auto"
    """The event loop ``serve`` runs on (``MUSE_ACP_EVENT_LOOP``); see ``muse_acp.event_loop``."""

    @property
    def traces(self) -> Path:
        """The folder traces are written to."""
        return self.trace_dir or self.data_dir / "traces"


def default_data_dir(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "muse-acp"


def _is_backend(value: str) -> TypeGuard[BackendSetting]:
    return value in BACKEND_SETTINGS


def check_backend(raw: str, source: str) -> BackendSetting:
    """``raw`` as a backend setting, or a ConfigError saying which ``source`` held what."""
    value = raw.strip().lower()
    if not _is_backend(value):
        accepted = ", ".join(BACKEND_SETTINGS[:-1]) + f" or {BACKEND_SETTINGS[-1]}"
        raise ConfigError(
            f"{source} must be {accepted} (msp: `muse serve`; exec: the legacy `muse exec "
            f"--json`; auto: msp when Muse has `serve`, else exec), got {raw!r}"
        )
    return value


def _is_trace(value: str) -> TypeGuard[TraceSetting]:
    return value in TRACE_SETTINGS


def check_trace(raw: str, source: str) -> TraceSetting:
    """``raw`` as a trace setting (``1`` meaning ``redacted``, ``0`` ``off``), or a
    ConfigError saying which ``source`` held what."""
    value = {"1": "redacted", "0": "off", "": "off"}.get(raw.strip().lower(), raw.strip().lower())
    if not _is_trace(value):
        raise ConfigError(
            f"{source} must be off, redacted (secrets hidden, text replaced by sizes and hashes) "
            f"or full (secrets hidden, text kept), got {raw!r}"
        )
    return value


def _is_event_loop(value: str) -> TypeGuard[EventLoopSetting]:
    return value in EVENT_LOOP_SETTINGS


def check_event_loop(raw: str, source: str) -> EventLoopSetting:
    """``raw`` as an event loop setting (empty meaning ``auto``), or a ConfigError saying which
    ``source`` held what."""
    value = raw.strip().lower() or "auto"
    if not _is_event_loop(value):
        raise ConfigError(
            f"{source} must be auto (uvloop where it is installed) or asyncio (the standard "
            f"library's event loop), got {raw!r}"
        )
    return value


def _flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in {"", "0", "false", "no"}:
        return False
    if value in {"1", "true", "yes"}:
        return True
    raise ConfigError(f"{name} must be 1 (on) or 0 (off), got {raw!r}")


def _seconds(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or value > 86400:
        raise ConfigError(f"{name} must be a number of seconds between 0 and 86400, got {raw!r}")
    return value


def load_config(
    environ: Mapping[str, str],
    *,
    muse_bin: str | None = None,
    data_dir: Path | None = None,
    backend: str | None = None,
    trace: str | None = None,
) -> AdapterConfig:
    """Build the configuration from explicit options and the environment.

    Raises:
        ConfigError: a variable holds an unusable value.
    """
    deadlines = Deadlines(
        **{
            key: _seconds(variable, environ[variable])
            for key, variable in _DEADLINE_VARIABLES.items()
            if environ.get(variable)
        }
    )
    explicit_data = data_dir or (Path(environ[ENV_DATA_DIR]) if environ.get(ENV_DATA_DIR) else None)
    if backend:
        chosen = check_backend(backend, "--backend")
    else:
        raw_backend = environ.get(ENV_BACKEND, "")
        chosen = check_backend(raw_backend, ENV_BACKEND) if raw_backend.strip() else "auto"
    if trace:
        traced = check_trace(trace, "--trace")
    else:
        traced = check_trace(environ.get(ENV_TRACE, ""), ENV_TRACE)
    return AdapterConfig(
        muse_bin=muse_bin or environ.get(ENV_MUSE_BIN) or None,
        data_dir=explicit_data or default_data_dir(environ),
        deadlines=deadlines,
        backend=chosen,
        trust_newer_host=_flag(ENV_TRUST_NEWER, environ.get(ENV_TRUST_NEWER, "")),
        trace=traced,
        trace_dir=Path(environ[ENV_TRACE_DIR]) if environ.get(ENV_TRACE_DIR) else None,
        event_loop=check_event_loop(environ.get(ENV_EVENT_LOOP, ""), ENV_EVENT_LOOP),
    )
