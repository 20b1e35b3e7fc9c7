"""``muse-acp doctor``: what the configured Muse executable is and what muse-acp can do with it.

Contract: ``run_doctor`` prints, to stdout, one line per finding: the adapter settings, which
Muse executable would be used and why (``--muse``, ``MUSE_ACP_MUSE_BIN`` or PATH), what its
``--version`` printed and the version read from it, whether it supports ``serve`` and which
safety flags ``serve --help`` lists, and which version-gated features are on for that version
(``muse_acp.host.versions.VERIFIED_HOSTS``). It ends with a one-line verdict and returns 0 when
the adapter can serve with this executable, or 1 with what to install or set when it cannot.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, TextIO

import anyio

from muse_acp.config import ENV_MUSE_BIN, ConfigError, load_config
from muse_acp.host.binary import SERVE_FLAGS, HostUnavailable, MuseBinary, probe, resolve_binary
from muse_acp.host.versions import VERIFIED_HOSTS, Feature, supports

__all__ = ["FEATURE_DESCRIPTIONS", "run_doctor"]

FEATURE_DESCRIPTIONS: Final[Mapping[Feature, str]] = MappingProxyType(
    {
        "storedOutput": "whole tool outputs readable by clients",
    }
)
"""What each version-gated feature gives a user; a feature missing here shows its name."""

_LABEL_WIDTH: Final = 14


class _Report:
    """The doctor's findings, written as aligned lines."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def line(self, label: str, text: str) -> None:
        self._stream.write(f"  {label.ljust(_LABEL_WIDTH)}{text}\n")

    def verdict(self, ready: bool, text: str) -> int:
        self._stream.write(
            f"\n  {'verdict'.ljust(_LABEL_WIDTH)}{'ready' if ready else 'NOT READY'}"
        )
        self._stream.write(f": {text}\n")
        self._stream.flush()
        return 0 if ready else 1


def _origin(muse: str | None, environ: Mapping[str, str]) -> str:
    """Where the executable is looked for, in the adapter's own order."""
    if muse:
        return "--muse"
    if environ.get(ENV_MUSE_BIN):
        return ENV_MUSE_BIN
    return "PATH"


def _features(report: _Report, version: str | None) -> int:
    """Print each version-gated feature; returns how many are off."""
    off = 0
    for index, (feature, verified) in enumerate(VERIFIED_HOSTS.items()):
        enabled = supports(feature, version)
        off += not enabled
        versions = ", ".join(sorted(verified))
        description = FEATURE_DESCRIPTIONS.get(feature, feature)
        state = "on " if enabled else "off"
        report.line(
            "features" if index == 0 else "",
            f"{feature:<14}{state}  {description} (verified: {versions})",
        )
    return off


def _flags(binary: MuseBinary) -> str:
    listed = [flag for flag in SERVE_FLAGS if flag in binary.serve_flags]
    missing = [flag for flag in SERVE_FLAGS if flag not in binary.serve_flags]
    text = ", ".join(listed) if listed else "none"
    if missing:
        text += f"; missing {', '.join(missing)} (the modes that need them are refused)"
    return text


def _examine(report: _Report, binary: MuseBinary) -> int:
    first_line = next((line for line in binary.version_text.splitlines() if line.strip()), "")
    report.line("--version", first_line or "(printed nothing)")
    report.line("version", binary.version or "not recognised in the --version output")
    if not binary.serves:
        report.line("serve", "NOT supported (`serve --help` failed)")
        try:
            binary.require_serve()
        except HostUnavailable as error:
            return report.verdict(False, error.message)
    report.line("serve", "supported")
    report.line("safety flags", _flags(binary))
    off = _features(report, binary.version)
    if binary.version is None:
        caveat = "; its version is unknown, so every version-gated feature is off"
    elif off:
        caveat = f"; {off} version-gated feature(s) are off for Muse {binary.version}"
    else:
        caveat = ""
    return report.verdict(True, f"muse-acp can serve ACP with this Muse executable{caveat}.")


def run_doctor(muse: str | None) -> int:
    """Examine the Muse executable ``muse`` (else the configured one); returns the exit status."""
    report = _Report(sys.stdout)
    environ = os.environ
    sys.stdout.write("muse-acp doctor: can muse-acp serve ACP with this Muse executable?\n\n")
    try:
        config = load_config(environ, muse_bin=muse)
    except ConfigError as error:
        report.line("settings", f"NOT usable: {error}")
        return report.verdict(False, "fix or unset that variable; `muse-acp serve` refuses it.")
    report.line("data dir", str(config.data_dir))
    try:
        path = resolve_binary(config.muse_bin)
    except HostUnavailable as error:
        report.line("executable", f"not found (looked for it through {_origin(muse, environ)})")
        return report.verdict(False, error.message)
    report.line("executable", f"{path}  (through {_origin(muse, environ)})")
    try:
        binary = anyio.run(probe, path)
    except HostUnavailable as error:
        return report.verdict(False, error.message)
    return _examine(report, binary)
