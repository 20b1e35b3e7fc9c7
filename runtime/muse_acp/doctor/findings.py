"""What the doctor's checks share: the findings of one check (``Section``) and what earlier
checks established (``Doctor``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeAlias

from muse_acp.config import ENV_MUSE_BIN, AdapterConfig
from muse_acp.host.backends import BackendChoice
from muse_acp.host.binary import MuseBinary
from muse_acp_wire import msp

__all__ = ["SIMULATOR_AGENT", "Account", "Doctor", "Section"]

Account: TypeAlias = "msp.AccountState | str"
"""The credential a host reported, or why it could not report one."""

SIMULATOR_AGENT: Final = "muse-sim/"
"""How muse-sim's handshake ``userAgent`` begins: the simulator says what it is."""


@dataclass(slots=True)
class Section:
    """What one check found: labelled lines for people, facts for ``--json``."""

    name: str
    title: str
    findings: list[tuple[str, str]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None
    """Why the adapter cannot serve, when this check found a blocking problem."""

    def line(self, label: str, text: str) -> None:
        self.findings.append((label, text))


@dataclass(slots=True)
class Doctor:
    """What the checks share: the inputs, and what earlier checks established."""

    muse: str | None
    environ: Mapping[str, str]
    data_dir: Path | None = None
    backend_setting: str | None = None
    """``--backend``, when given."""
    config: AdapterConfig | None = None
    binary: MuseBinary | None = None
    backend: BackendChoice | None = None
    host_info: msp.InitializeResult | None = None
    account: Account | None = None
    """The credential the host reported, or why it could not say."""

    @property
    def origin(self) -> str:
        """Where the executable is looked for, in the adapter's own order."""
        if self.muse:
            return "--muse"
        if self.environ.get(ENV_MUSE_BIN):
            return ENV_MUSE_BIN
        return "PATH"

    @property
    def simulator(self) -> bool:
        """The host is muse-sim, which runs turns whether or not it is signed in."""
        info = self.host_info
        return info is not None and info.user_agent.startswith(SIMULATOR_AGENT)

    @property
    def host_version(self) -> str | None:
        """The version the host reported in its handshake, else the one ``--version`` printed."""
        if self.host_info is not None:
            return self.host_info.server_info.version
        return self.binary.version if self.binary is not None else None
