"""The fake model's script language: ``sim:`` directives in the lines of a prompt.

Contract: ``parse_prompt`` splits a prompt into its text (every line that is not a directive,
echoed back by the final agent message) and its directives, in order, one per line. A directive
line starts with ``sim:`` after optional leading blanks:

``sim:bash N``
    a ``bash`` tool call whose output is exactly ``N`` bytes of ``output-marker\\n`` repeated.
``sim:binary N``
    the same, but the stored bytes are not UTF-8 (a repeating pattern with 0xFF and 0x80).
``sim:unavailable N``
    as ``sim:bash N``, but the stored output is reported ``missing``.
``sim:search PATTERN`` / ``sim:web QUERY``
    a ``search`` / ``web_search`` tool call.
``sim:approve COMMAND`` / ``sim:stages K COMMAND``
    a ``bash`` tool call that needs approval, in one stage or in ``K`` stages.
``sim:ask``
    a ``request_user_input`` question.
``sim:hold``
    keep the turn running, silent, until it is cancelled, interrupted or steered.
``sim:fail KIND``
    end the turn ``failed`` with a turn error of that kind.
``sim:plan``
    publish a three-entry todo list.
``sim:crash``
    end the host process (non-zero) in the middle of the turn.
``sim:stream N``
    an agent message streamed as exactly ``N`` text deltas (``t0 ``, ``t1 ``, ...), the load of
    a long, fast model reply.

A ``sim:`` line that does not parse (unknown name, missing or bad argument) stays prompt text.
Sizes are whole bytes, at most ``MAX_OUTPUT_BYTES``; stage counts are 1 to ``MAX_STAGES``; delta
counts are 1 to ``MAX_STREAM_DELTAS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

__all__ = [
    "MAX_OUTPUT_BYTES",
    "MAX_STAGES",
    "MAX_STREAM_DELTAS",
    "Approve",
    "AskUser",
    "Crash",
    "Directive",
    "Fail",
    "Hold",
    "Plan",
    "Prompt",
    "Search",
    "Shell",
    "Stream",
    "WebSearch",
    "parse_prompt",
]

PREFIX: Final = "sim:"
MAX_OUTPUT_BYTES: Final = 1 << 30
MAX_STAGES: Final = 16
MAX_STREAM_DELTAS: Final = 100_000
"""Keeps the completed message (every delta joined) far below the host's 10 MiB frame limit."""


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
    """A bash tool call gated by an approval with ``stages`` stages."""

    command: str
    stages: int


@dataclass(frozen=True, slots=True)
class AskUser:
    pass


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
class Stream:
    """An agent message of ``deltas`` text deltas (``sim:stream N``)."""

    deltas: int


Directive: TypeAlias = (
    Shell | Search | WebSearch | Approve | AskUser | Hold | Fail | Plan | Crash | Stream
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
        "hold": _bare(Hold()),
        "fail": _text(Fail),
        "plan": _bare(Plan()),
        "crash": _bare(Crash()),
        "stream": _stream,
    }
)
"""Directive name -> parser of the rest of its line (None when the argument is unusable)."""


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
