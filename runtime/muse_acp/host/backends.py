"""Which backend drives Muse, chosen once from the user's setting and what the executable offers.

Contract: there are two backends. ``msp`` speaks MSP to ``muse serve`` (Muse 1.1.1 and newer);
``exec`` runs the legacy ``muse exec --json`` once per turn (Muse releases without ``serve``, or
by the user's choice). ``choose_backend`` decides, and says why, in this order:

* ``--backend`` / ``MUSE_ACP_BACKEND`` set to ``msp`` or ``exec`` is obeyed; an executable that
  cannot run the chosen backend is a ``HostUnavailable`` naming what it lacks (the other backend
  is never tried instead);
* ``auto`` (the default) takes ``msp`` when ``serve --help`` works, else ``exec`` when
  ``exec --help`` offers ``--json``, else ``HostUnavailable``.

``exec --help`` is probed only when the exec backend may be chosen, so an MSP start costs no
extra process. The choice is made per agent connection and never revised: a failure of the
chosen backend is reported as that backend's failure, not retried on the other one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from muse_acp.config import BackendSetting
from muse_acp.host.binary import HostUnavailable, MuseBinary, probe
from muse_acp.host.launch import SUBPROCESSES, Launcher
from muse_acp_wire import acp_handshake as acp

__all__ = ["BackendChoice", "choose_backend", "decide"]

_SETTING_SOURCE: Final = "--backend or MUSE_ACP_BACKEND"


@dataclass(frozen=True, slots=True)
class BackendChoice:
    """The backend that serves the connection, the executable it runs, and why."""

    kind: acp.MuseBackend
    binary: MuseBinary
    reason: str

    @property
    def exec(self) -> bool:
        return self.kind == "exec"

    def report(self) -> acp.MuseBackendReport:
        """The ``muse/backend`` entry of the initialize result's ``_meta``."""
        return acp.MuseBackendReport(backend=self.kind, reason=self.reason[:500])


def _version(binary: MuseBinary) -> str:
    return f"Muse {binary.version}" if binary.version else "this Muse executable"


def decide(setting: BackendSetting, binary: MuseBinary) -> BackendChoice:
    """The backend for ``setting`` and a probed ``binary`` (pure; see the module contract).

    ``binary`` must have been probed with ``exec_help`` whenever exec may be chosen.

    Raises:
        HostUnavailable: the executable cannot run the backend asked for, or neither backend.
    """
    if setting == "msp":
        binary.require_serve()
        return BackendChoice("msp", binary, f"msp was chosen with {_SETTING_SOURCE}")
    if setting == "exec":
        binary.require_exec()
        return BackendChoice("exec", binary, f"exec was chosen with {_SETTING_SOURCE}")
    if binary.serves:
        return BackendChoice(
            "msp", binary, f"{_version(binary)} has `serve`, so MSP is used (the default)"
        )
    if binary.execs:
        return BackendChoice(
            "exec",
            binary,
            f"{_version(binary)} has no `serve` (added in Muse 1.1.1), so the legacy "
            "`muse exec --json` is used",
        )
    raise HostUnavailable(
        f"the Muse executable {binary.path} supports neither `serve` nor `exec --json`; "
        "install Muse Code 1.1.1 or newer, or point MUSE_ACP_MUSE_BIN at one"
    )


async def choose_backend(
    setting: BackendSetting,
    path: str,
    *,
    launcher: Launcher = SUBPROCESSES,
    env: Mapping[str, str] | None = None,
) -> BackendChoice:
    """Probe the executable at ``path`` as far as ``setting`` needs (``probe``), then ``decide``.

    Raises:
        HostUnavailable: see ``decide``; also when the executable cannot be probed.
    """
    binary = await probe(path, launcher=launcher, env=env)
    if setting == "exec" or (setting == "auto" and not binary.serves):
        binary = await probe(path, exec_help=True, launcher=launcher, env=env)
    return decide(setting, binary)
