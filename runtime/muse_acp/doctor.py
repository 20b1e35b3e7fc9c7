"""``muse-acp doctor``: what muse-acp is, which Muse executable it would use, and whether it works.

Contract: ``run_doctor`` runs the ``CHECKS`` in order (muse-acp's own settings, the Muse
executable, the backend, the MSP handshake, the features of the host's version, sign-in) and
prints their findings to stdout, one section per check, then a one-line verdict; with
``as_json`` the same findings are one JSON document. A check that finds a blocking problem ends
the run there. It returns 0 when the adapter can serve ACP with that executable, else 1 with
what to install or set. muse-sim (its handshake says so) is ready while not signed in, as its
turns need no credential, and the verdict names it. The handshake's ``muse serve`` runs in a
scratch folder within ``HANDSHAKE_TIMEOUT`` seconds and is always reaped. More checks are added
by appending to ``CHECKS``.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, TextIO, TypeAlias

import anyio

from muse_acp import __version__
from muse_acp.agent.commands.account import describe_credential
from muse_acp.config import (
    ENV_MUSE_BIN,
    ENV_TRUST_NEWER,
    AdapterConfig,
    ConfigError,
    load_config,
)
from muse_acp.host.backends import BackendChoice, choose_backend
from muse_acp.host.binary import (
    EXEC_FLAGS,
    SERVE_FLAGS,
    HostUnavailable,
    MuseBinary,
    probe,
    resolve_binary,
)
from muse_acp.host.bindings import bindings_for, parse_version
from muse_acp.host.client import HostEnded, open_host
from muse_acp.host.features import NEEDS, HostFeatures, features_of
from muse_acp.host.versions import VERIFIED_HOSTS, Feature, newer_than_verified
from muse_acp.logs import resolve_level
from muse_acp.redact import redact
from muse_acp.rpc import ConnectionClosed, RpcError
from muse_acp_wire import msp
from muse_acp_wire.msp_outlines import OUTLINES

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

Account: TypeAlias = "msp.AccountState | str"
"""The credential a host reported, or why it could not report one."""

FEATURE_DESCRIPTIONS: Final[Mapping[Feature, str]] = MappingProxyType(
    {
        "storedOutput": "whole tool outputs readable by clients",
        "mcpOverlay": "editor MCP servers through a private settings file",
        "taskControl": "clients can stop workflows and background tasks (_muse/task)",
        "planUsage": "the account's subscription usage in /status and usage updates",
        "goals": "the /goal command sets, pauses, resumes and clears Muse's goal",
        "planSkill": "Plan mode as Muse's own Plan skill",
        "nativeApprovalPolicy": "the approval policy option, kept by Muse",
        "sessionDelete": "session/delete removes the session from Muse itself",
        "turnForkBoundary": "a fork can end after a chosen turn",
    }
)
"""What each optional feature gives a user; a feature missing here shows its name."""

HANDSHAKE_TIMEOUT: Final = 30.0
"""Seconds the executable's ``serve`` may take to answer ``initialize`` during the doctor."""

SIMULATOR_AGENT: Final = "muse-sim/"
"""How muse-sim's handshake ``userAgent`` begins: the simulator says what it is."""

_LABEL_WIDTH: Final = 14


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


def _adapter(doctor: Doctor) -> Section:
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
    section.line("data dir", str(doctor.config.data_dir))
    section.line("log level", level)
    section.line("settings", "usable")
    section.facts.update(data_dir=str(doctor.config.data_dir), log_level=level)
    return section


def _flags(binary: MuseBinary) -> str:
    listed = [flag for flag in SERVE_FLAGS if flag in binary.serve_flags]
    missing = [flag for flag in SERVE_FLAGS if flag not in binary.serve_flags]
    text = ", ".join(listed) if listed else "none"
    if missing:
        text += f"; missing {', '.join(missing)} (the modes that need them are refused)"
    return text


def _executable(doctor: Doctor) -> Section:
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


def _backend(doctor: Doctor) -> Section:
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


async def _initialize(path: str, budget: float) -> tuple[msp.InitializeResult, Account]:
    """The host's handshake, and its account (or why it could not be read)."""
    with tempfile.TemporaryDirectory(prefix="muse-acp-doctor-") as scratch:
        async with open_host(path, cwd=scratch, startup_timeout=budget, experimental=True) as host:
            try:
                with anyio.fail_after(budget):
                    return host.info, await host.call("account/read", None, msp.AccountState)
            except TimeoutError:
                return host.info, f"it did not answer account/read within {budget:.0f}s"
            except RpcError as error:
                return host.info, f"it refused account/read: {redact(error.message, limit=200)}"


def _handshake_failure(error: BaseException, timeout: float) -> str:
    if isinstance(error, TimeoutError):
        return f"it did not answer MSP initialize within {timeout:.0f}s"
    if isinstance(error, HostEnded):
        reason = f"it ended before answering MSP initialize (exit code {error.exit_code})"
        last = next((line for line in reversed(error.stderr_tail.splitlines()) if line), "")
        return reason + (f"; its last words: {redact(last, limit=200)}" if last else "")
    if isinstance(error, RpcError):
        return f"its answer to MSP initialize was not a result: {redact(error.message, limit=200)}"
    if isinstance(error, ConnectionClosed):
        return "it closed its output before answering MSP initialize"
    return f"it could not be started: {redact(str(error), limit=200)}"


def _handshake(doctor: Doctor) -> Section:
    section = Section("handshake", "MSP handshake")
    assert doctor.binary is not None
    assert doctor.config is not None
    if doctor.backend is not None and doctor.backend.exec:
        section.line("initialize", "not used: the exec backend speaks no MSP")
        section.facts.update(ok=None, skipped="exec backend")
        return section
    path = doctor.binary.path
    timeout = min(HANDSHAKE_TIMEOUT, doctor.config.deadlines.startup)
    started = time.monotonic()
    try:
        info, doctor.account = anyio.run(_initialize, path, timeout)
    except (RpcError, ConnectionClosed, OSError, TimeoutError) as error:
        why = _handshake_failure(error, timeout)
        section.line("initialize", f"NOT usable: {why}")
        section.facts.update(ok=False, error=why)
        section.problem = (
            f"the Muse executable {path} is not usable: {why}. Point --muse or "
            f"{ENV_MUSE_BIN} at Muse Code (1.1.1 or newer) or at `muse-sim`."
        )
        return section
    elapsed = time.monotonic() - started
    doctor.host_info = info
    server = f"{info.server_info.name} {info.server_info.version}"
    section.line("initialize", f"answered by {server} in {elapsed:.1f}s")
    section.line("sessions", f"{info.session_durability}; Muse home {info.muse_home}")
    section.facts.update(
        ok=True,
        server_name=info.server_info.name,
        server_version=info.server_info.version,
        session_durability=info.session_durability,
        muse_home=info.muse_home,
        seconds=round(elapsed, 3),
    )
    return section


def _why_off(feature: Feature, features: HostFeatures) -> str:
    """Why ``feature`` is off on a host whose features are ``features``."""
    if features.bundle is None:
        return "no MSP bundle covers this Muse"
    if feature not in features.withdrawn:
        return f"MSP {features.bundle} does not declare it"
    if feature in VERIFIED_HOSTS:
        verified = ", ".join(sorted(VERIFIED_HOSTS[feature]))
        if newer_than_verified(feature, features.version):
            return f"verified on {verified}; set {ENV_TRUST_NEWER}=1 to turn it on"
        return f"offered only on verified hosts ({verified})"
    return "known not to work on this Muse"


def _features(doctor: Doctor) -> Section:
    section = Section("features", "Features")
    version = doctor.host_version
    on_exec = doctor.backend is not None and doctor.backend.exec
    trust_newer = doctor.config is not None and doctor.config.trust_newer_host
    features = features_of(version, trust_newer=trust_newer)
    if not on_exec and version is not None:
        bindings = bindings_for(version)
        newest = max(OUTLINES, key=lambda v: parse_version(v) or (0, 0, 0))
        if features.bundle is None:
            how = "none (this Muse is older than every bundle)"
        elif bindings.exact:
            how = f"MSP {bindings.version} (its own)"
        elif bindings.version == newest:
            how = f"MSP {bindings.version} (the newest: this Muse is newer than every bundle)"
        else:
            how = f"MSP {bindings.version} (the nearest older one)"
        section.line("bindings", f"{how} for Muse {version}")
        section.facts.update(bundle=features.bundle, exact_bundle=bindings.exact)
    width = max(map(len, NEEDS)) + 2
    for index, feature in enumerate(NEEDS):
        enabled = features.has(feature) and not on_exec
        description = FEATURE_DESCRIPTIONS.get(feature, feature)
        why = "" if enabled or on_exec else f" ({_why_off(feature, features)})"
        if enabled and feature in VERIFIED_HOSTS and version not in VERIFIED_HOSTS[feature]:
            why = f" (on because {ENV_TRUST_NEWER}=1 trusts newer hosts)"
        section.line(
            "features" if index == 0 else "",
            f"{feature:<{width}}{'on ' if enabled else 'off'}  {description}{why}",
        )
        section.facts[feature] = {
            "enabled": enabled,
            "verified": sorted(VERIFIED_HOSTS.get(feature, ())),
            "withdrawn": feature in features.withdrawn,
            "trustNewer": trust_newer,
        }
    return section


def _sign_in(doctor: Doctor) -> Section:
    section = Section("sign_in", "Sign-in")
    account = doctor.account
    if account is None:
        section.line("credential", "not checked: only an MSP host reports it")
        section.facts.update(ok=None)
    elif isinstance(account, str):
        section.line("credential", f"unknown: {account}")
        section.facts.update(ok=None, error=account)
    elif account.credential_required and account.state == "loggedOut" and doctor.simulator:
        # The simulator's turns need no credential; only what it reports is Muse's.
        section.line(
            "credential",
            "none, as a real Muse reports before `muse login`; muse-sim, the simulator, runs "
            "turns without one (`muse-sim login` plays signing in)",
        )
        section.facts.update(ok=None, state=account.state, simulator=True)
    elif account.credential_required and account.state == "loggedOut":
        section.line("credential", "NONE: Muse has no credential, so every turn would fail")
        section.facts.update(ok=False, state=account.state)
        muse = doctor.binary.path if doctor.binary is not None else "muse"
        section.problem = (
            f"Muse is not signed in. Run `{muse} login` in a terminal, or export "
            "META_API_KEY where muse-acp runs, then run the doctor again."
        )
    else:
        section.line("credential", describe_credential(account))
        section.facts.update(ok=True, state=account.state)
    return section


CHECKS: Final[tuple[Callable[[Doctor], Section], ...]] = (
    _adapter,
    _executable,
    _backend,
    _handshake,
    _features,
    _sign_in,
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
) -> int:
    """Run the checks (see the module contract); returns the exit status."""
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
    (_write_json if as_json else _write_text)(sys.stdout, sections, ready, verdict)
    return 0 if ready else 1
