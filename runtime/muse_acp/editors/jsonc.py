"""JSON with comments and trailing commas (Zed's ``settings.json``), located and edited in place.

Contract: ``parse`` reads a document into ``Node``s that keep where every value, member key and
comma is (offsets into the text), skipping ``//`` and ``/* */`` comments, a byte-order mark and
trailing commas; malformed text raises ``JsoncError`` naming the line and column. ``set_member``
and ``remove_member`` return a new text that differs from the old one only inside the object
they edit: every other byte, comments and layout included, stays as it was. A member is added
after the object's last one, on its own lines, indented as its siblings, with a trailing comma
when the last member had one; a member on lines of its own is removed with its lines, so
removing what ``set_member`` added gives the original text back (an object that had no
member may keep a line break before its brace). ``render`` writes a value as
``set_member`` inserts it: objects one member a line, arrays of scalars on one line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "JsoncError",
    "Member",
    "Node",
    "member",
    "parse",
    "remove_member",
    "render",
    "set_member",
]

_NUMBER: Final = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS: Final = {"true": True, "false": False, "null": None}
_DEFAULT_UNIT: Final = "  "


class JsoncError(ValueError):
    """The text is not JSON with comments, or not the shape an edit needs."""


@dataclass(slots=True)
class Member:
    """One ``"key": value`` of an object; ``comma`` is the offset of the comma after it."""

    key: str
    key_start: int
    value: Node
    comma: int | None = None


@dataclass(slots=True)
class Node:
    """A value and where it is: ``text[start:end]``; members for an object, in order."""

    start: int
    end: int
    value: Any
    members: list[Member] | None = None
    items: list[Node] = field(default_factory=list)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def fail(self, what: str, at: int | None = None) -> JsoncError:
        where = self.at if at is None else at
        line = self.text.count("\n", 0, where) + 1
        column = where - (self.text.rfind("\n", 0, where) + 1) + 1
        return JsoncError(f"line {line}, column {column}: {what}")

    def skip(self) -> None:
        """Past whitespace and comments."""
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            if char in " \t\r\n\ufeff":
                self.at += 1
            elif text.startswith("//", self.at):
                end = text.find("\n", self.at)
                self.at = len(text) if end < 0 else end
            elif text.startswith("/*", self.at):
                end = text.find("*/", self.at + 2)
                if end < 0:
                    raise self.fail("a /* comment is never closed")
                self.at = end + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.at : self.at + 1]

    def value(self) -> Node:
        char = self.peek()
        start = self.at
        if char == "{":
            return self.object()
        if char == "[":
            return self.array()
        if char == '"':
            return Node(start, self.string_end(), self.string())
        matched = _NUMBER.match(self.text, self.at)
        if matched:
            self.at = matched.end()
            return Node(start, self.at, json.loads(matched.group()))
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, self.at):
                self.at += len(word)
                return Node(start, self.at, literal)
        raise self.fail("expected a value" if char else "the text ends where a value should be")

    def string_end(self) -> int:
        at = self.at + 1
        while at < len(self.text):
            char = self.text[at]
            if char == "\\":
                at += 2
            elif char == '"':
                return at + 1
            elif char == "\n":
                break
            else:
                at += 1
        raise self.fail("a string is never closed")

    def string(self) -> str:
        end = self.string_end()
        try:
            decoded: str = json.loads(self.text[self.at : end])
        except json.JSONDecodeError:
            raise self.fail("a string has an invalid escape") from None
        self.at = end
        return decoded

    def object(self) -> Node:
        start = self.at
        self.at += 1
        members: list[Member] = []
        while self.peek() != "}":
            if self.peek() != '"':
                raise self.fail("expected a member name in double quotes, or }")
            key_start = self.at
            key = self.string()
            if self.peek() != ":":
                raise self.fail(f"expected : after the member name {key!r}")
            self.at += 1
            found = Member(key, key_start, self.value())
            members.append(found)
            if self.peek() == ",":
                found.comma = self.at
                self.at += 1
            elif self.peek() != "}":
                raise self.fail("expected , or } after a member")
        self.at += 1
        value = {m.key: m.value.value for m in members}
        return Node(start, self.at, value, members=members)

    def array(self) -> Node:
        start = self.at
        self.at += 1
        items: list[Node] = []
        while self.peek() != "]":
            items.append(self.value())
            if self.peek() == ",":
                self.at += 1
            elif self.peek() != "]":
                raise self.fail("expected , or ] after an item")
        self.at += 1
        return Node(start, self.at, [item.value for item in items], items=items)


def parse(text: str) -> Node:
    """The document's value with its places (see the module contract).

    Raises:
        JsoncError: the text is not one JSON value with comments.
    """
    parser = _Parser(text)
    node = parser.value()
    if parser.peek():
        raise parser.fail("more text after the document's value")
    return node


def member(node: Node, key: str) -> Member | None:
    """The member ``key`` of the object ``node``, or None."""
    return next((m for m in node.members or () if m.key == key), None)


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _indent_of(text: str, at: int) -> str:
    """The whitespace opening the line that holds ``at``."""
    start = _line_start(text, at)
    return text[start : start + len(text[start:at]) - len(text[start:at].lstrip(" \t"))]


def _unit(text: str) -> str:
    """One level of indentation, as the document uses it."""
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else _DEFAULT_UNIT


def render(value: Any, indent: str, unit: str, newline: str = "\n") -> str:
    """``value`` as JSON written from a line indented ``indent`` (see the module contract)."""
    if isinstance(value, dict) and value:
        inner = indent + unit
        lines = [
            f"{inner}{json.dumps(k, ensure_ascii=False)}: {render(v, inner, unit, newline)}"
            for k, v in value.items()
        ]
        return "{" + newline + ("," + newline).join(lines) + newline + indent + "}"
    if isinstance(value, list) and any(isinstance(v, dict | list) for v in value):
        inner = indent + unit
        lines = [inner + render(v, inner, unit, newline) for v in value]
        return "[" + newline + ("," + newline).join(lines) + newline + indent + "]"
    return json.dumps(value, ensure_ascii=False)


def _end_of_line(text: str, at: int) -> int | None:
    """Where the line ends if only blanks and comments follow ``at`` on it, else None."""
    parser = _Parser(text)
    parser.at = at
    while True:
        while parser.at < len(text) and text[parser.at] in " \t\r":
            parser.at += 1
        if text.startswith("//", parser.at) or parser.at >= len(text) or text[parser.at] == "\n":
            end = text.find("\n", parser.at)
            return len(text) if end < 0 else end
        if text.startswith("/*", parser.at):
            close = text.find("*/", parser.at + 2)
            if close < 0 or "\n" in text[parser.at : close]:
                return None
            parser.at = close + 2
            continue
        return None


def set_member(text: str, node: Node, key: str, value: Any) -> str:
    """``text`` with the member ``key`` of the object ``node`` set to ``value``.

    An equal value already there is left as written.
    """
    if node.members is None:
        raise JsoncError(f"cannot set {key!r}: the value at offset {node.start} is not an object")
    newline = "\r\n" if "\r\n" in text else "\n"
    unit = _unit(text)
    existing = member(node, key)
    if existing is not None:
        if existing.value.value == value:
            return text
        indent = _indent_of(text, existing.key_start)
        rendered = render(value, indent, unit, newline)
        return text[: existing.value.start] + rendered + text[existing.value.end :]
    if not node.members:
        # After whatever comments the empty object holds, before its closing brace.
        outer = _indent_of(text, node.start)
        rendered = render(value, outer + unit, unit, newline)
        line = f"{newline}{outer}{unit}{json.dumps(key, ensure_ascii=False)}: {rendered}"
        inside = text[node.start + 1 : node.end - 1]
        content = inside.rstrip(" \t\r\n")
        tail = inside[len(content) :]
        if "\n" not in tail:  # the brace closes on the line that opens or comments it
            tail = newline + outer
        return text[: node.start + 1] + content + line + tail + text[node.end - 1 :]
    last = node.members[-1]
    indent = _indent_of(text, last.key_start)
    rendered = render(value, indent, unit, newline)
    entry = f"{json.dumps(key, ensure_ascii=False)}: {rendered}"
    after = last.comma + 1 if last.comma is not None else last.value.end
    comma = "" if last.comma is not None else ","
    trailing = "," if last.comma is not None else ""
    line_end = _end_of_line(text, after)
    if line_end is None or text[_line_start(text, last.key_start) : last.key_start].strip():
        # Members share lines here: the new one follows the last on its line.
        return text[:after] + comma + " " + entry + trailing + text[after:]
    if line_end > 0 and text[line_end - 1] == "\r":
        line_end -= 1
    inserted = f"{newline}{indent}{entry}{trailing}"
    return text[:after] + comma + text[after:line_end] + inserted + text[line_end:]


def remove_member(text: str, node: Node, key: str) -> str:
    """``text`` without the member ``key`` of the object ``node`` (unchanged if it has none)."""
    found = member(node, key)
    if found is None or node.members is None:
        return text
    index = node.members.index(found)
    end = found.comma + 1 if found.comma is not None else found.value.end
    start = found.key_start
    line_start = _line_start(text, start)
    line_end = _end_of_line(text, end)
    before = node.members[index - 1] if index > 0 else None
    if not text[line_start:start].strip() and line_end is not None:
        start, end = line_start, min(line_end + 1, len(text))
    elif found.comma is None and before is not None and before.comma is not None:
        # On a shared line, the comma before goes with the last member.
        return text[: before.comma] + text[end:]
    else:
        start = len(text[:start].rstrip(" \t")) if before is not None else start
        return text[:start] + text[end:]
    text = text[:start] + text[end:]
    if found.comma is None and before is not None and before.comma is not None:
        text = text[: before.comma] + text[before.comma + 1 :]
    return text
