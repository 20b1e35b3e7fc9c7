"""The fake model's script language: ``sim:`` directives in the lines of a prompt.

Contract: ``parse_prompt`` splits a prompt into its text (every line that is not a directive,
echoed back by the final agent message) and its directives, in order, one per line. A directive
line starts with ``sim:`` after optional leading blanks; each directive is one of the
``Directive`` types below (delegated work's are in ``delegation``, those acting on the session
itself in ``session_directives``), and docs/muse-sim.md lists what each one plays.

A ``sim:`` line that does not parse (unknown name, missing or bad argument) stays prompt text,
never an error. Arguments are bounded: sizes by ``MAX_OUTPUT_BYTES``, stages by ``MAX_STAGES``,
deltas by ``MAX_STREAM_DELTAS``, paced lines by ``MAX_PACED_LINES``, spawn and paced durations
(decimal seconds) by ``MAX_SPAWN_SECONDS``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

from muse_acp.sim.script.delegation import DELEGATION_PARSERS, Subagent, Workflow
from muse_acp.sim.script.session_directives import (
    SESSION_PARSERS,
    AutoCompact,
    Flags,
    Gap,
    Name,
    Roots,
    SwitchApproval,
    SwitchModel,
    ViewLost,
)

__all__ = [
    "DELTA_PIECES",
    "DIRECTIVE_NAMES",
    "MAX_OUTPUT_BYTES",
    "MAX_PACED_LINES",
    "MAX_SPAWN_SECONDS",
    "MAX_STAGES",
    "MAX_STREAM_DELTAS",
    "Approve",
    "AskUser",
    "Background",
    "Crash",
    "Directive",
    "Edit",
    "Fail",
    "Foreground",
    "Hold",
    "Paced",
    "Plan",
    "Prompt",
    "ProtectedWrite",
    "Retry",
    "Search",
    "Shell",
    "Spawn",
    "Stream",
    "Subagent",
    "WebSearch",
    "Workflow",
    "parse_prompt",
    "split_text",
]

PREFIX: Final = "sim:"
MAX_OUTPUT_BYTES: Final = 1 << 30
MAX_STAGES: Final = 16
MAX_STREAM_DELTAS: Final = 100_000
"""Keeps the completed message (every delta joined) far below the host's 10 MiB frame limit."""
MAX_SPAWN_SECONDS: Final = 3600
MAX_PACED_LINES: Final = 1000
_SECONDS: Final = re.compile(r"[0-9]{1,4}(?:\.[0-9]{1,3})?")


@dataclass(frozen=True, slots=True)
class Shell:
    """A bash tool call with ``size`` bytes of output (``sim:bash|binary|unavailable``)."""

    size: int
    output: Literal["text", "binary", "unavailable"]


@dataclass(frozen=True, slots=True)
class Search:
    pattern: str


@dataclass(frozen=True, slots=True)
class WebSearch:
    query: str


@dataclass(frozen=True, slots=True)
class Approve:
    """A bash tool call gated by an approval with ``stages`` stages (``race``: the host may
    settle the second stage itself, ``sim:stagerace``)."""

    command: str
    stages: int
    race: bool = False
    review: bool = False
    """Muse's reviewer holds the approval first (``sim:review``)."""


@dataclass(frozen=True, slots=True)
class ProtectedWrite:
    """A ``write_file`` call to a protected path (``sim:protected``, ``sim:protected-bare``)."""

    path: str
    bare: bool = False
    """The approval goes out without ``viewCursor``, as a real 1.4.2 host sent it."""


@dataclass(frozen=True, slots=True)
class Edit:
    """An ``edit_file`` call replacing ``find`` by ``replace`` in ``path`` (``sim:edit``)."""

    path: str
    find: str
    replace: str


@dataclass(frozen=True, slots=True)
class Spawn:
    """A bash call running a real ``sleep`` child (``sim:spawn SECONDS``)."""

    seconds: str
    """The duration as written: ``sleep``'s argument."""


@dataclass(frozen=True, slots=True)
class Paced:
    """A bash call printing ``lines`` lines evenly over ``seconds`` (``sim:paced N SECONDS``)."""

    lines: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Background:
    """A tool call sent to the background (``sim:background COMMAND``)."""

    command: str


@dataclass(frozen=True, slots=True)
class AskUser:
    """A question to the user (``sim:ask``); with ``countdown``, Muse settles it ``timedOut``
    after that many seconds unless a client engaged (``sim:timed-ask SECONDS``)."""

    countdown: float | None = None


@dataclass(frozen=True, slots=True)
class Hold:
    pass


@dataclass(frozen=True, slots=True)
class Fail:
    kind: str


@dataclass(frozen=True, slots=True)
class Plan:
    pass


@dataclass(frozen=True, slots=True)
class Crash:
    pass


@dataclass(frozen=True, slots=True)
class Retry:
    """A model call retried after a backoff (``sim:retry``)."""


@dataclass(frozen=True, slots=True)
class Foreground:
    """The turn's own work is done; a background check holds it open (``sim:foreground``)."""


@dataclass(frozen=True, slots=True)
class Stream:
    """An agent message of ``deltas`` text deltas (``sim:stream N``)."""

    deltas: int


Directive: TypeAlias = (
    Shell
    | Search
    | WebSearch
    | Approve
    | AskUser
    | Hold
    | Fail
    | Plan
    | Crash
    | Retry
    | Foreground
    | AutoCompact
    | Stream
    | ProtectedWrite
    | Edit
    | Gap
    | Spawn
    | Paced
    | Name
    | ViewLost
    | Workflow
    | Subagent
    | Background
    | SwitchModel
    | SwitchApproval
    | Flags
    | Roots
)


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str
    """The prompt without its directive lines."""
    directives: tuple[Directive, ...]


def _size(arg: str) -> int | None:
    return int(arg) if arg.isdigit() and int(arg) <= MAX_OUTPUT_BYTES else None


def _shell(output: Literal["text", "binary", "unavailable"]) -> Callable[[str], Directive | None]:
    def parse(arg: str) -> Directive | None:
        size = _size(arg)
        return None if size is None else Shell(size, output)

    return parse


def _text(make: Callable[[str], Directive]) -> Callable[[str], Directive | None]:
    return lambda arg: make(arg) if arg else None


def _stream(arg: str) -> Directive | None:
    count = int(arg) if arg.isascii() and arg.isdigit() and len(arg) <= 6 else 0
    return Stream(count) if 1 <= count <= MAX_STREAM_DELTAS else None


def _bare(directive: Directive) -> Callable[[str], Directive | None]:
    return lambda arg: directive if not arg else None


def _stages(arg: str) -> Directive | None:
    count, _, command = arg.partition(" ")
    if not count.isdigit() or not 1 <= int(count) <= MAX_STAGES or not command.strip():
        return None
    return Approve(command.strip(), int(count))


def _edit(arg: str) -> Directive | None:
    words = arg.split()
    return Edit(*words) if len(words) == 3 else None


def _spawn(arg: str) -> Directive | None:
    if _SECONDS.fullmatch(arg) is None or float(arg) > MAX_SPAWN_SECONDS:
        return None
    return Spawn(arg)


def _paced(arg: str) -> Directive | None:
    count, _, seconds = arg.partition(" ")
    if not count.isascii() or not count.isdigit() or not 1 <= int(count) <= MAX_PACED_LINES:
        return None
    if _SECONDS.fullmatch(seconds) is None or float(seconds) > MAX_SPAWN_SECONDS:
        return None
    return Paced(int(count), float(seconds))


def _timed_ask(arg: str) -> Directive | None:
    if _SECONDS.fullmatch(arg) is None or float(arg) > MAX_SPAWN_SECONDS:
        return None
    return AskUser(float(arg))


_PARSERS: Final[Mapping[str, Callable[[str], Directive | None]]] = MappingProxyType(
    {
        "bash": _shell("text"),
        "binary": _shell("binary"),
        "unavailable": _shell("unavailable"),
        "search": _text(Search),
        "web": _text(WebSearch),
        "approve": _text(lambda command: Approve(command, 1)),
        "stages": _stages,
        "ask": _bare(AskUser()),
        "timed-ask": _timed_ask,
        "hold": _bare(Hold()),
        "fail": _text(Fail),
        "plan": _bare(Plan()),
        "crash": _bare(Crash()),
        "stream": _stream,
        "stagerace": _text(lambda command: Approve(command, 3, race=True)),
        "review": _text(lambda command: Approve(command, 1, review=True)),
        "retry": _bare(Retry()),
        "foreground": _bare(Foreground()),
        "protected": _text(ProtectedWrite),
        "protected-bare": _text(lambda path: ProtectedWrite(path, bare=True)),
        "edit": _edit,
        "spawn": _spawn,
        "paced": _paced,
        **DELEGATION_PARSERS,
        **SESSION_PARSERS,
        "background": _text(Background),
    }
)
"""Directive name -> parser of the rest of its line (None when the argument is unusable)."""
DIRECTIVE_NAMES: Final = tuple(_PARSERS)
"""Every directive name (``sim:<name>``)."""


def parse_directive(line: str) -> Directive | None:
    """The directive on ``line``, or None when the line is prompt text."""
    stripped = line.strip()
    if not stripped.startswith(PREFIX):
        return None
    name, _, arg = stripped[len(PREFIX) :].partition(" ")
    parser = _PARSERS.get(name)
    return None if parser is None else parser(arg.strip())


def parse_prompt(text: str) -> Prompt:
    """Split ``text`` into prompt text and directives (see the module contract)."""
    kept: list[str] = []
    directives: list[Directive] = []
    for line in text.split("\n"):
        directive = parse_directive(line)
        if directive is None:
            kept.append(line)
        else:
            directives.append(directive)
    return Prompt("\n".join(kept).strip("\n"), tuple(directives))


DELTA_PIECES: Final = 4
"""Parts a message is streamed in (``split_text``)."""


def split_text(text: str, pieces: int = DELTA_PIECES) -> list[str]:
    """``text`` cut at word boundaries into at most ``pieces`` parts that join back to it."""
    words = text.split(" ")
    tokens = [word + " " for word in words[:-1]] + [words[-1]]
    tokens = [token for token in tokens if token]
    if not tokens:
        return []
    size = -(-len(tokens) // pieces)
    return ["".join(tokens[i : i + size]) for i in range(0, len(tokens), size)]
