"""Every frame the agent writes, checked against muse-acp's ACP bundle and the official SDK's.

``frame_problems`` reads a recorded conversation (``Agent.frames``) and returns one line per
frame the agent wrote that does not validate, naming the frame, the check and the reason;
``check_recorded`` fails the test with them, for the frames of every agent the test started:

- muse-acp's generated models (``muse_acp_wire.acp``): each request to the client, each
  notification and each result by the method it answers must validate and write back unchanged
  (nothing the bundle does not know); an error has no ACP model of ours and is left to the next;
- the TypeScript ACP SDK's v1 schemas (``tests.acp_sdk_schema``), with ``jsonschema``: the
  stable 1.25.0 ``schema.json`` where it has the method (and, for ``session/update``, the
  update's kind), else ``schema.unstable.json``; a ``session/update`` is checked against its
  kind's variant alone, not the whole union;
- the installed Python SDK's models (ACP 1.19), for the payloads it has a model of.

Extension methods (a name with a leading ``_``) are outside both SDKs: they type their payloads
as any JSON, so only muse-acp's own models speak for them.

Validators are built once per process, and a payload already found valid is not checked again:
its key is its canonical JSON with the values of ``FREE_STRINGS`` blanked (a session's id, a
tool call's id, a text chunk's text), which no schema constrains (``_free_strings_are_free``
makes sure), so the suite's thousands of similar frames cost little.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Generator, Iterable, Mapping
from typing import Any, Final

import pytest
from acp import schema as python_sdk
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ValidationError

from muse_acp_wire import acp
from muse_acp_wire._base import WireModel
from tests.acp_sdk_schema import VERSION, MissingSchemas, schema_files
from tests.frames_seen import Frame, recorded_frames

STABLE: Final = "schema.json"
UNSTABLE: Final = "schema.unstable.json"
PROTOCOL_LEVEL: Final = frozenset({"$/cancel_request"})
"""Notifications either side sends (the agent, to withdraw a request it made)."""
_valid: set[str] = set()
"""Keys (check, method, canonical payload) of payloads found valid in this process."""


@functools.cache
def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_files()[name].read_text(encoding="utf-8"))
    return loaded


@functools.cache
def _definitions(name: str) -> Mapping[tuple[str, str], str]:
    """The schema's ``$defs`` entry for each (role, method) the agent writes: ``request`` to
    the client, ``notification`` (to the client, or either way: ``$/cancel_request``),
    ``response`` to a client request."""
    found = {}
    for key, entry in _schema(name)["$defs"].items():
        method, side = entry.get("x-method"), entry.get("x-side")
        if side == "client" and key.endswith("Request"):
            found[("request", method)] = key
        elif side in ("client", "protocol") and key.endswith("Notification"):
            found[("notification", method)] = key
        elif side == "agent" and key.endswith("Response"):
            found[("response", method)] = key
    return found


@functools.cache
def _updates(name: str) -> Mapping[str, dict[str, Any]]:
    """The schema's ``SessionUpdate`` variants by ``sessionUpdate`` kind."""
    variants = _schema(name)["$defs"]["SessionUpdate"]["oneOf"]
    return {v["properties"]["sessionUpdate"]["const"]: v for v in variants}


@functools.cache
def _validator(name: str, definition: str, kind: str | None = None) -> Draft202012Validator:
    """A validator of ``$defs[definition]``; for ``SessionNotification`` with ``kind``, one
    whose ``update`` is that kind's variant only (not the whole union)."""
    schema = _schema(name)
    root: dict[str, Any] = dict(schema["$defs"][definition])
    if kind is not None:
        root["properties"] = {**root["properties"], "update": _updates(name)[kind]}
    root["$defs"] = schema["$defs"]
    return Draft202012Validator(root)


def _sdk_target(role: str, method: str, payload: Any) -> tuple[str, str, str | None] | None:
    """(schema file, definition, update kind) to check ``payload`` with, stable first."""
    update = payload.get("update") if isinstance(payload, dict) else None
    kind = update.get("sessionUpdate") if isinstance(update, dict) else None
    for name in (STABLE, UNSTABLE):
        definition = _definitions(name).get((role, method))
        if definition is not None and (kind is None or kind in _updates(name)):
            return name, definition, kind
    return None


def _check_sdk(role: str, method: str, payload: Any) -> str | None:
    if method.startswith("_"):
        return None  # an extension method: the SDK types its payload as any JSON
    target = _sdk_target(role, method, payload)
    if target is None:
        return f"neither SDK {VERSION} schema has this {role} of {method!r}"
    name, definition, kind = target
    error = best_match(_validator(name, definition, kind).iter_errors(payload))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "(top)"
    checked = f"{definition}[{kind}]" if kind else definition
    return f"SDK {VERSION} {name} {checked}: at {where}: {error.message}"


@functools.cache
def _python_sdk_kinds() -> frozenset[str]:
    union = python_sdk.SessionNotification.model_fields["update"].annotation
    variants = typing.get_args(union)
    return frozenset(
        typing.get_args(v.model_fields["session_update"].annotation)[0] for v in variants
    )


def _check_python_sdk(role: str, method: str, payload: Any) -> str | None:
    target = _sdk_target(role, method, payload)
    if method.startswith("_") or target is None:
        return None
    _, definition, kind = target
    model = getattr(python_sdk, definition, None)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return None
    if kind is not None and kind not in _python_sdk_kinds():
        return None
    try:
        model.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "/".join(str(part) for part in first["loc"]) or "(top)"
        return f"Python SDK {definition}: at {where}: {first['msg']}"
    return None


def _ours(role: str, method: str) -> type[WireModel] | None:
    if role == "request":
        spec = acp.CLIENT_REQUESTS.get(method)
        return spec.params if spec else None
    if role == "notification":  # to the client, or a protocol-level one, sent either way
        note = acp.CLIENT_NOTIFICATIONS.get(method)
        if note is None and method in PROTOCOL_LEVEL:
            note = acp.AGENT_NOTIFICATIONS.get(method)
        return note.params if note else None
    served = acp.AGENT_REQUESTS.get(method)
    return served.result if served else None


def _check_ours(role: str, method: str, payload: Any) -> str | None:
    model = _ours(role, method)
    if model is None:
        return f"muse-acp's ACP bundle has no {role} of {method!r}"
    try:
        parsed = model.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "/".join(str(part) for part in first["loc"]) or "(top)"
        return f"muse-acp's {model.__name__}: at {where}: {first['msg']}: {first['input']!r}"
    written = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if written != payload:
        return f"muse-acp's {model.__name__} does not write it back unchanged (unknown members?)"
    return None


FREE_STRINGS: Final = (
    ("SessionNotification", "sessionId", acp.SessionNotification, "session_id"),
    ("ToolCall", "toolCallId", acp.ToolCallSessionUpdate, "tool_call_id"),
    ("ToolCallUpdate", "toolCallId", acp.ToolCallUpdateSessionUpdate, "tool_call_id"),
    ("TextContent", "text", acp.TextContentBlock, "text"),
)
"""(SDK definition, member, muse-acp model, field) of the strings the cache key blanks."""
CONSTRAINTS: Final = frozenset({"pattern", "format", "enum", "const", "minLength", "maxLength"})


def _constraints(name: str, node: Any) -> set[str]:
    """The string constraints ``node`` of schema ``name`` sets, through refs and combinators."""
    if not isinstance(node, dict):
        return set()
    found = set(CONSTRAINTS & set(node))
    if "$ref" in node:
        found |= _constraints(name, _schema(name)["$defs"][node["$ref"].rsplit("/", 1)[1]])
    for combined in ("allOf", "anyOf", "oneOf"):
        for branch in node.get(combined, []):
            found |= _constraints(name, branch)
    return found


@functools.cache
def _free_strings_are_free() -> None:
    """Refuse to blank a string in the cache key that a schema or model constrains."""
    for definition, member, model, field in FREE_STRINGS:
        for name in (STABLE, UNSTABLE):
            member_schema = _schema(name)["$defs"][definition]["properties"][member]
            found = _constraints(name, member_schema)
            if found:
                raise AssertionError(f"{name} {definition}.{member} is constrained: {found}")
        declared = model.model_fields[field]
        if declared.annotation is not str or declared.metadata:
            raise AssertionError(f"muse-acp's {model.__name__}.{field} is constrained")


def _key(role: str, method: str, payload: Any) -> str:
    """The cache key of a payload (see the module docstring)."""
    if method == "session/update" and isinstance(payload, dict):
        _free_strings_are_free()
        update = dict(payload.get("update") or {})
        if isinstance(update.get("toolCallId"), str):
            update["toolCallId"] = ""
        content = update.get("content")
        if isinstance(content, dict) and content.get("type") == "text":
            update["content"] = {**content, "text": ""}
        if isinstance(payload.get("sessionId"), str):
            payload = {**payload, "sessionId": "", "update": update}
    return json.dumps([role, method, payload], sort_keys=True, separators=(",", ":"))


def _check(role: str, method: str, payload: Any) -> list[str]:
    key = _key(role, method, payload)
    if key in _valid:
        return []
    checks = (_check_ours, _check_sdk, _check_python_sdk)
    found = [problem for check in checks if (problem := check(role, method, payload))]
    if not found:
        _valid.add(key)
    return found


def _check_error(error: Any) -> list[str]:
    key = json.dumps(["error", error], sort_keys=True, separators=(",", ":"))
    if key in _valid:
        return []
    found = best_match(_validator(STABLE, "Error").iter_errors(error))
    if found is None:
        _valid.add(key)
        return []
    return [f"SDK {VERSION} {STABLE} Error: {found.message}"]


def frame_problems(frames: Iterable[Frame], start: int = 0) -> list[str]:
    """One line per frame the agent wrote (``"in"``) that does not validate, naming it; from
    ``start`` on (the requests answered may come earlier)."""
    frames = list(frames)
    asked: dict[str, str | None] = {}  # by the id's JSON; None: ids sent twice (raw clients)
    for direction, message in frames:
        if direction == "out" and "method" in message and "id" in message:
            key = json.dumps(message["id"], sort_keys=True)
            asked[key] = None if key in asked else str(message["method"])
    problems = []
    for index, (direction, message) in enumerate(frames):
        if direction != "in" or index < start:
            continue
        if "method" in message:
            role = "request" if "id" in message else "notification"
            found = _check(role, message["method"], message.get("params"))
        elif "error" in message:
            found = _check_error(message["error"])
        elif (answered := json.dumps(message.get("id"), sort_keys=True)) in asked:
            method = asked[answered]
            found = [] if method is None else _check("response", method, message.get("result"))
        else:
            found = ["a result answering no request the client sent"]
        if message.get("jsonrpc") != "2.0":
            found.append('no "jsonrpc": "2.0"')
        shown = json.dumps(message, sort_keys=True)
        shown = shown if len(shown) <= 400 else shown[:400] + "..."
        problems += [f"frame {index} {shown}: {problem}" for problem in found]
    return problems


def check_recorded() -> None:
    """Fail the running test when a frame the agents started since the last call wrote does
    not validate (naming the first ten), or when the SDK's schemas are not fetched."""
    recorded = recorded_frames()
    try:
        problems = [line for frames, start in recorded for line in frame_problems(frames, start)]
    except MissingSchemas as exc:
        missing = str(exc)  # failed outside the handler, so the report is this message alone
    else:
        missing = ""
    if missing:
        pytest.fail(missing, pytrace=False)
    if problems:
        shown = "\n".join(problems[:10])
        more = f"\n(and {len(problems) - 10} more)" if len(problems) > 10 else ""
        pytest.fail(f"the agent wrote frames that do not validate:\n{shown}{more}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Fail a test that passed when a frame its agents wrote does not validate (see
    ``frame_check``): checked here, once per test, so no test has to ask for it."""
    try:
        outcome = yield
    except BaseException:
        recorded_frames()  # a failed test's frames are not the next test's to answer for
        raise
    check_recorded()  # frames written since the last test ended: set-up and this test's own
    return outcome
