"""Host faults muse-sim injects on request, for reliability tests of its clients.

Contract: ``MUSE_SIM_FAULTS`` is a comma-separated list of faults (docs/muse-sim.md lists them);
``parse_faults`` turns it into a frozen ``Faults`` value or raises ``FaultSyntaxError`` (the
command line then exits 2). The host consults that value at fixed points; nothing else in
muse-sim reads the variable. A fault that exits ends the process at once with
``FAULT_EXIT_CODE`` after one line on stderr, so a client sees exactly what a crashing host
leaves behind (the session lease is freed by the OS); a host served in process ends alone
(``EXIT_HOOK``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final, NoReturn

__all__ = [
    "EXIT_HOOK",
    "FAULTS_ENV",
    "FAULT_EXIT_CODE",
    "MAX_FLOOD_BYTES",
    "ExitHook",
    "FaultSyntaxError",
    "Faults",
    "crash",
    "exit_now",
    "parse_faults",
]

FAULTS_ENV: Final = "MUSE_SIM_FAULTS"
FAULT_EXIT_CODE: Final = 1
"""The exit status of a simulated crash: what a host dying of an unhandled fault returns."""
MAX_FLOOD_BYTES: Final = 1 << 30
MAX_SLOW_MS: Final = 60_000
MAX_OVERSIZED_BYTES: Final = 64 << 20

EXIT_POINTS: Final = frozenset(
    {"startup", "handshake", "approval", "userInput", "steer", "readOutput", "stream", "mcp"}
)
HANG_POINTS: Final = frozenset({"handshake"})


class FaultSyntaxError(ValueError):
    """``MUSE_SIM_FAULTS`` holds something that is not a known fault."""


@dataclass(frozen=True, slots=True)
class Faults:
    """The faults in effect for this process; the default injects none."""

    exits: frozenset[str] = frozenset()
    hangs: frozenset[str] = frozenset()
    hang_ack: frozenset[str] = frozenset()
    slow_ack: frozenset[str] = frozenset()
    ack_delay_ms: int = 0
    """How long a ``slow-ack`` request waits for its answer."""
    exit_before_ack: frozenset[str] = frozenset()
    exit_after_ack: frozenset[str] = frozenset()
    refuse: frozenset[str] = frozenset()
    malformed: frozenset[str] = frozenset()
    oversized: frozenset[str] = frozenset()
    oversized_bytes: int = 0
    """Padding of an ``oversized`` line; 0 means just over the host frame limit."""
    slow_ms: int = 0
    stderr_flood: int = 0
    stray_request: str | None = None
    """The server request a turn sends midway and waits on (``stray-request``)."""
    names: tuple[str, ...] = field(default=())
    """The faults as given, for diagnostics."""

    def exits_at(self, point: str) -> bool:
        return point in self.exits


def _checked_point(kind: str, arg: str, allowed: frozenset[str]) -> str:
    if arg not in allowed:
        points = ", ".join(sorted(allowed))
        raise FaultSyntaxError(f"{kind}:{arg} is not a fault point ({points})")
    return arg


def _checked_method(kind: str, arg: str) -> str:
    if "/" not in arg and arg != "initialize":
        raise FaultSyntaxError(f"{kind}:{arg!r} does not name an MSP method")
    return arg


def _checked_count(kind: str, arg: str, limit: int) -> int:
    if not arg.isdigit() or int(arg) > limit:
        raise FaultSyntaxError(f"{kind}:{arg!r} needs a whole number up to {limit}")
    return int(arg)


def _exit(f: Faults, arg: str) -> Faults:
    return replace(f, exits=f.exits | {_checked_point("exit", arg, EXIT_POINTS)})


def _hang(f: Faults, arg: str) -> Faults:
    return replace(f, hangs=f.hangs | {_checked_point("hang", arg, HANG_POINTS)})


def _hang_ack(f: Faults, arg: str) -> Faults:
    return replace(f, hang_ack=f.hang_ack | {_checked_method("hang-ack", arg)})


def _slow_ack(f: Faults, arg: str) -> Faults:
    return replace(f, slow_ack=f.slow_ack | {_checked_method("slow-ack", arg)})


def _ack_delay(f: Faults, arg: str) -> Faults:
    return replace(f, ack_delay_ms=_checked_count("ack-delay", arg, MAX_SLOW_MS))


def _exit_before_ack(f: Faults, arg: str) -> Faults:
    method = _checked_method("exit-before-ack", arg)
    return replace(f, exit_before_ack=f.exit_before_ack | {method})


def _exit_after_ack(f: Faults, arg: str) -> Faults:
    method = _checked_method("exit-after-ack", arg)
    return replace(f, exit_after_ack=f.exit_after_ack | {method})


def _refuse(f: Faults, arg: str) -> Faults:
    return replace(f, refuse=f.refuse | {_checked_method("refuse", arg)})


def _malformed(f: Faults, arg: str) -> Faults:
    return replace(f, malformed=f.malformed | {_checked_method("malformed", arg)})


def _oversized(f: Faults, arg: str) -> Faults:
    return replace(f, oversized=f.oversized | {_checked_method("oversized", arg)})


def _oversized_bytes(f: Faults, arg: str) -> Faults:
    size = _checked_count("oversized-bytes", arg, MAX_OVERSIZED_BYTES)
    return replace(f, oversized_bytes=size)


def _slow(f: Faults, arg: str) -> Faults:
    return replace(f, slow_ms=_checked_count("slow", arg, MAX_SLOW_MS))


def _stderr_flood(f: Faults, arg: str) -> Faults:
    return replace(f, stderr_flood=_checked_count("stderr-flood", arg, MAX_FLOOD_BYTES))


def _stray_request(f: Faults, arg: str) -> Faults:
    return replace(f, stray_request=_checked_method("stray-request", arg))


_PARSERS: Final[Mapping[str, Callable[[Faults, str], Faults]]] = MappingProxyType(
    {
        "exit": _exit,
        "hang": _hang,
        "hang-ack": _hang_ack,
        "slow-ack": _slow_ack,
        "ack-delay": _ack_delay,
        "exit-before-ack": _exit_before_ack,
        "exit-after-ack": _exit_after_ack,
        "refuse": _refuse,
        "malformed": _malformed,
        "oversized": _oversized,
        "oversized-bytes": _oversized_bytes,
        "slow": _slow,
        "stderr-flood": _stderr_flood,
        "stray-request": _stray_request,
    }
)
"""Fault kind -> how its argument is checked and recorded."""


def parse_faults(text: str) -> Faults:
    """Parse a ``MUSE_SIM_FAULTS`` value (see the module docstring).

    Raises:
        FaultSyntaxError: an entry is not ``kind:argument`` with a known kind and argument.
    """
    faults = Faults()
    names: list[str] = []
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        kind, sep, arg = entry.partition(":")
        parser = _PARSERS.get(kind)
        if parser is None or not sep:
            known = ", ".join(_PARSERS)
            raise FaultSyntaxError(f"unknown fault {entry!r} (kinds: {known})")
        faults = parser(faults, arg)
        names.append(entry)
    return replace(faults, names=tuple(names))


ExitHook = Callable[[int, Sequence[str]], NoReturn]
"""Ends a host served in process (``sim.in_process``) with an exit status and stderr lines."""

EXIT_HOOK: Final[ContextVar[ExitHook | None]] = ContextVar("muse_sim_exit_hook", default=None)
"""Set by a host served in process: its crash ends that host, not the process serving it."""


def crash(lines: Sequence[str]) -> NoReturn:
    """End the host at once, as a crashing host would (no cleanup, no flushing of stdout), with
    ``FAULT_EXIT_CODE`` after writing ``lines`` to stderr; in process, through ``EXIT_HOOK``."""
    hook = EXIT_HOOK.get()
    if hook is not None:
        hook(FAULT_EXIT_CODE, [f"muse-sim: {line}" for line in lines])
    try:
        sys.stderr.writelines(f"muse-sim: {line}\n" for line in lines)
        sys.stderr.flush()
    finally:
        os._exit(FAULT_EXIT_CODE)


def exit_now(reason: str, last_words: Sequence[str] = ()) -> NoReturn:
    """``crash`` for the injected fault ``reason``; ``last_words`` follow the fault's own line."""
    crash([f"injected fault {reason}: exiting", *last_words])
