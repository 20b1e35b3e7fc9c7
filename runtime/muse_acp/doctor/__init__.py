"""``muse-acp doctor``: what muse-acp is, which Muse executable it would use, and whether it works.

Contract: ``run_doctor`` runs the ``CHECKS`` in order (muse-acp's own settings, the Muse
executable, the backend, the MSP handshake, the features of the host's version, sign-in) and
prints their findings to stdout, one section per check (``local`` checks this machine,
``host`` the Muse it runs), then a one-line verdict; with ``as_json`` the same findings are one
JSON document. A check that finds a blocking problem ends
the run there. It returns 0 when the adapter can serve ACP with that executable, else 1 with
what to install or set. muse-sim (its handshake says so) is named in the verdict, and asked to
sign in like Muse. More checks are added by appending to
``CHECKS``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final, TextIO

from muse_acp import __version__
from muse_acp.doctor.findings import SIMULATOR_AGENT, Account, Doctor, Section
from muse_acp.doctor.host import (
    FEATURE_DESCRIPTIONS,
    HANDSHAKE_TIMEOUT,
    features,
    handshake,
    sign_in,
)
from muse_acp.doctor.local import adapter, backend, executable
from muse_acp.host.features import NEEDS

__all__ = [
    "CHECKS",
    "FEATURE_DESCRIPTIONS",
    "HANDSHAKE_TIMEOUT",
    "SIMULATOR_AGENT",
    "Account",
    "Doctor",
    "Section",
    "run_doctor",
]

_LABEL_WIDTH: Final = 14

CHECKS: Final[tuple[Callable[[Doctor], Section], ...]] = (
    adapter,
    executable,
    backend,
    handshake,
    features,
    sign_in,
)
"""The checks in the order they run; each may rely on what the earlier ones set on ``Doctor``."""


def _ready_text(doctor: Doctor, sections: list[Section]) -> str:
    version = doctor.host_version
    features = next((s for s in sections if s.name == "features"), None)
    found = features.facts if features else {}
    off = sum(1 for name in NEEDS if name in found and not found[name]["enabled"])
    if doctor.backend is not None and doctor.backend.exec:
        caveat = " through the legacy exec backend, without MSP features"
    elif version is None:
        caveat = "; its version is unknown, so every version-gated feature is off"
    elif off:
        caveat = f"; {off} version-gated feature(s) are off for Muse {version}"
    else:
        caveat = ""
    if doctor.simulator:
        caveat += " (muse-sim, the Muse simulator: scripted turns, no model, no account)"
    return f"muse-acp can serve ACP with this Muse executable{caveat}."


def _write_text(stream: TextIO, sections: list[Section], ready: bool, verdict: str) -> None:
    stream.write("muse-acp doctor: can muse-acp serve ACP with this Muse executable?\n")
    for section in sections:
        stream.write(f"\n{section.title}\n")
        for label, text in section.findings:
            stream.write(f"  {label.ljust(_LABEL_WIDTH)}{text}\n")
    state = "ready" if ready else "NOT READY"
    stream.write(f"\n  {'verdict'.ljust(_LABEL_WIDTH)}{state}: {verdict}\n")
    stream.flush()


def _write_json(stream: TextIO, sections: list[Section], ready: bool, verdict: str) -> None:
    document = {
        "muse_acp": {"version": __version__},
        "sections": [
            {
                "name": section.name,
                "title": section.title,
                "ok": section.problem is None,
                "findings": [{"label": label, "text": text} for label, text in section.findings],
                "facts": section.facts,
            }
            for section in sections
        ],
        "ready": ready,
        "verdict": verdict,
    }
    stream.write(json.dumps(document, indent=2) + "\n")
    stream.flush()


def run_doctor(
    muse: str | None,
    *,
    as_json: bool = False,
    data_dir: Path | None = None,
    backend: str | None = None,
    out: TextIO | None = None,
) -> int:
    """Run the checks (see the module contract); returns the exit status. The findings go to
    ``out`` (default: stdout)."""
    doctor = Doctor(muse=muse, environ=os.environ, data_dir=data_dir, backend_setting=backend)
    sections: list[Section] = []
    problem: str | None = None
    for check in CHECKS:
        section = check(doctor)
        sections.append(section)
        problem = section.problem
        if problem is not None:
            break
    ready = problem is None
    verdict = _ready_text(doctor, sections) if problem is None else problem
    (_write_json if as_json else _write_text)(out or sys.stdout, sections, ready, verdict)
    return 0 if ready else 1
