"""The doctor's checks of this machine: muse-acp's own settings, the Muse executable and the
backend it would serve with."""

from __future__ import annotations

import platform
import sys

import anyio

from muse_acp import __version__
from muse_acp.config import ConfigError, load_config
from muse_acp.doctor.findings import Doctor, Section
from muse_acp.event_loop import backend_options
from muse_acp.host.backends import choose_backend
from muse_acp.host.binary import (
    EXEC_FLAGS,
    SERVE_FLAGS,
    HostUnavailable,
    MuseBinary,
    probe,
    resolve_binary,
)
from muse_acp.logs import resolve_level

__all__ = ["adapter", "backend", "executable"]


def adapter(doctor: Doctor) -> Section:
    section = Section("muse_acp", "muse-acp")
    python = f"Python {platform.python_version()}, {sys.executable}"
    section.line("muse-acp", f"{__version__}  ({python})")
    section.facts.update(version=__version__, python=platform.python_version())
    try:
        level = resolve_level(None, doctor.environ)
        doctor.config = load_config(
            doctor.environ,
            muse_bin=doctor.muse,
            data_dir=doctor.data_dir,
            backend=doctor.backend_setting,
        )
    except ConfigError as error:
        section.line("settings", f"NOT usable: {error}")
        section.facts["settings_error"] = str(error)
        section.problem = f"{error}; fix or unset it, `muse-acp serve` refuses it too."
        return section
    loop = "uvloop" if backend_options(doctor.config.event_loop) else "asyncio"
    section.line("data dir", str(doctor.config.data_dir))
    section.line("log level", level)
    section.line("event loop", loop)
    section.line("settings", "usable")
    section.facts.update(data_dir=str(doctor.config.data_dir), log_level=level, event_loop=loop)
    return section


def _flags(binary: MuseBinary) -> str:
    listed = [flag for flag in SERVE_FLAGS if flag in binary.serve_flags]
    missing = [flag for flag in SERVE_FLAGS if flag not in binary.serve_flags]
    text = ", ".join(listed) if listed else "none"
    if missing:
        text += f"; missing {', '.join(missing)} (the modes that need them are refused)"
    return text


def executable(doctor: Doctor) -> Section:
    section = Section("executable", "Muse executable")
    section.facts["origin"] = doctor.origin
    assert doctor.config is not None
    try:
        path = resolve_binary(doctor.config.muse_bin)
    except HostUnavailable as error:
        section.line("executable", f"not found (looked for it through {doctor.origin})")
        section.facts["path"] = None
        section.problem = error.message
        return section
    section.line("executable", f"{path}  (through {doctor.origin})")
    section.facts["path"] = path
    try:
        binary = anyio.run(probe, path)
    except HostUnavailable as error:
        section.problem = error.message
        return section
    doctor.binary = binary
    first_line = next((line for line in binary.version_text.splitlines() if line.strip()), "")
    section.line("--version", first_line or "(printed nothing)")
    section.line("version", binary.version or "not recognised in the --version output")
    section.facts.update(
        version_text=first_line,
        version=binary.version,
        serve=binary.serves,
        safety_flags=[flag for flag in SERVE_FLAGS if flag in binary.serve_flags],
    )
    if not binary.serves:
        # Whether that rules the executable out is the backend check's to say.
        section.line("serve", "NOT supported (`serve --help` failed)")
        return section
    section.line("serve", "supported")
    section.line("safety flags", _flags(binary))
    return section


def backend(doctor: Doctor) -> Section:
    section = Section("backend", "Backend")
    assert doctor.binary is not None
    assert doctor.config is not None
    setting = doctor.config.backend
    section.facts["setting"] = setting
    try:
        choice = anyio.run(choose_backend, setting, doctor.binary.path)
    except HostUnavailable as error:
        section.line("backend", f"NOT usable ({setting} was asked for)")
        section.facts.update(backend=None, reason=error.message)
        section.problem = error.message
        return section
    doctor.backend = choice
    doctor.binary = choice.binary
    section.line("backend", f"{choice.kind}: {choice.reason}")
    section.facts.update(backend=choice.kind, reason=choice.reason)
    if choice.exec:
        offered = [flag for flag in EXEC_FLAGS if flag in (choice.binary.exec_flags or ())]
        missing = [flag for flag in EXEC_FLAGS if flag not in offered]
        text = ", ".join(offered)
        if missing:
            text += f"; missing {', '.join(missing)} (what needs them is refused)"
        section.line("exec flags", text)
        section.line(
            "exec turns",
            "one `muse exec --json` per prompt; no steering, stored output, local commands, "
            "or session list/load/resume/fork",
        )
        section.facts["exec_flags"] = offered
    return section
