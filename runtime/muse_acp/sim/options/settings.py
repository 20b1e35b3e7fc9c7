"""What one muse-sim process runs with: its state directory, host version, faults and flags.

Contract: ``resolve_home`` picks the state directory (``MUSE_SIM_HOME``, else
``$XDG_DATA_HOME/muse-sim``, else ``~/.local/share/muse-sim``); ``ServeOptions`` carries the
``serve`` flags and everything resolved from the environment (faults and quirks included),
frozen, so the host never reads the environment itself. Light on imports: the command line
uses it before deciding what to load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from muse_acp.sim.options.faults import Faults
from muse_acp.sim.options.quirks import NO_QUIRKS, Quirks
from muse_acp.sim.options.versions import HostVersion

__all__ = [
    "CAPTURE_ENV",
    "HOME_ENV",
    "ServeOptions",
    "resolve_home",
]

HOME_ENV: Final = "MUSE_SIM_HOME"
CAPTURE_ENV: Final = "MUSE_SIM_CAPTURE"


def resolve_home(env: Mapping[str, str]) -> Path:
    """The state directory muse-sim keeps sessions and credentials in (made absolute)."""
    explicit = env.get(HOME_ENV, "")
    if explicit:
        return Path(explicit).expanduser().absolute()
    data_home = env.get("XDG_DATA_HOME", "")
    base = Path(data_home) if data_home else Path.home() / ".local" / "share"
    return (base / "muse-sim").absolute()


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """Everything ``muse-sim serve`` was started with."""

    home: Path
    version: HostVersion
    faults: Faults
    disable_write: bool = False
    disable_shell: bool = False
    disable_sandbox: bool = False
    sandbox_network: str = "proxy-only"
    no_session_log: bool = False
    trust_workspace: bool = False
    env_api_key: bool = False
    """``META_API_KEY`` is set (not blank) in the environment ``serve`` started in; its value is
    never kept."""
    quirks: Quirks = NO_QUIRKS
    """Real-host behaviours to play (``MUSE_SIM_QUIRKS``)."""
    capture: Path | None = None
    """Where to append every request line received, when ``MUSE_SIM_CAPTURE`` is set."""
    timings: Path | None = None
    """Where to leave when each turn started and spoke (``MUSE_SIM_TIMINGS``; ``first_words``)."""
    replay: Path | None = None
    """A transcript to play back instead of simulating a host."""
    pace: float = 0.0
    """The replay's factor of the recorded intervals (0: answer at once)."""
    settings_mcp: Mapping[str, Any] = field(default_factory=dict)
    """The MCP servers of Muse's settings file, unparsed (see ``mcp_settings``)."""
    default_profile: str | None = None
    """The permission profile Muse's settings file gives new sessions (None: it names none)."""

    def safety_flags(self) -> tuple[str, ...]:
        """The safety flags ``serve`` was given, in ``serve --help`` order, the sandbox network
        mode always (it has a default); what ``sim:flags`` reports."""
        named = (
            ("--disable-write", self.disable_write),
            ("--disable-shell", self.disable_shell),
            ("--disable-sandbox", self.disable_sandbox),
            ("--trust-workspace", self.trust_workspace),
        )
        chosen = [flag for flag, given in named if given]
        return (*chosen, f"--sandbox-network={self.sandbox_network}")
