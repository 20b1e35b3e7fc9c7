"""What a conforming JSON-RPC 2.0 agent must answer to a frame: the oracle of the fuzz tests.

Contract: ``expect(line)`` reads one frame's bytes (the line without its LF) the way the
JSON-RPC 2.0 specification and muse-acp's framing contract describe it, independently of the
agent's code, and returns an ``Expectation``: no answer at all, or exactly one response with a
given id (``None`` for ``id: null``) whose outcome is one of an allowed set. ``BurstExpectations``
adds up the expectations of a burst of frames, allowing for the two ways frames of one burst
interact: a request withdrawn by ``$/cancel_request`` may be answered REQUEST_CANCELLED, and a
request reusing the id of one still in progress may be refused INVALID_REQUEST.

Framing: a CR before the LF is dropped and lines of ASCII whitespace only are skipped. A frame
must be strict UTF-8 JSON (no byte order mark, no ``NaN``/``Infinity``); frames built by these
tests stay far inside the nesting and number limits, and frames built to exceed them carry their
own expectation instead of using this oracle.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from muse_acp.rpc import (
    AUTH_REQUIRED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
)

__all__ = [
    "CANCEL_REQUEST",
    "RESULT",
    "SESSION_REQUESTS",
    "BurstExpectations",
    "Expectation",
    "expect",
    "request_outcomes",
]

RESULT: Final = 0
"""Stands for "a successful result" among an expectation's allowed outcomes."""

CANCEL_REQUEST: Final = "$/cancel_request"

_SESSION_SCOPED: Final = frozenset({INVALID_PARAMS, RESOURCE_NOT_FOUND})
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

SESSION_REQUESTS: Final = (
    "session/load",
    "session/resume",
    "session/fork",
    "session/close",
    "session/delete",
    "session/set_mode",
    "session/set_config_option",
    "session/prompt",
    "_muse/readOutput",
    "_muse/steer",
    "_session/steering",
)
"""Every request that names a session, all served by the agent under test."""

REQUEST_OUTCOMES: Final[Mapping[str, frozenset[int]]] = MappingProxyType(
    {
        "initialize": frozenset({RESULT, INVALID_PARAMS}),
        "authenticate": frozenset({RESULT, INVALID_PARAMS, AUTH_REQUIRED}),
        "logout": frozenset({RESULT}),
        "session/new": frozenset({RESULT, INVALID_PARAMS}),
        "session/list": frozenset({RESULT, INVALID_PARAMS}),
        **{method: _SESSION_SCOPED for method in SESSION_REQUESTS},
    }
)
"""Outcomes a request may have when its params are random and name no session of the agent.

Every method the agent serves is here; a method missing from this table is unknown to the agent
and must be answered METHOD_NOT_FOUND. INTERNAL_ERROR is never allowed: garbage is the client's
mistake, and the agent must say so.
"""


def request_outcomes(method: str) -> frozenset[int]:
    return REQUEST_OUTCOMES.get(method, frozenset({METHOD_NOT_FOUND}))


@dataclass(frozen=True, slots=True)
class Expectation:
    """No answer (``answered`` False), or one response with ``request_id`` and an ``outcome``."""

    answered: bool
    request_id: object = None
    outcomes: frozenset[int] = frozenset()
    method: str | None = None
    """The method of a request, so a burst can tell which requests a cancel targets."""
    cancel_target: object = None
    """For a well-formed ``$/cancel_request`` notification: the id it withdraws."""

    def allows(self, response: Mapping[str, Any]) -> bool:
        error = response.get("error")
        if "result" in response and error is None:
            return RESULT in self.outcomes
        return isinstance(error, dict) and error.get("code") in self.outcomes


NO_ANSWER: Final = Expectation(answered=False)


def _answer(request_id: object, *codes: int) -> Expectation:
    return Expectation(answered=True, request_id=request_id, outcomes=frozenset(codes))


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _has_surrogate(value: object) -> bool:
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
    if isinstance(value, list):
        return any(_has_surrogate(item) for item in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    return False


def _usable_id(message: dict[str, Any]) -> object:
    request_id = message.get("id")
    if type(request_id) is int:
        return request_id
    if type(request_id) is str and not _has_surrogate(request_id):
        return request_id
    return None


def expect(line: bytes) -> Expectation:
    """The expectation for one frame (see the module contract)."""
    if line.endswith(b"\r"):
        line = line[:-1]
    if not line or line.isspace():
        return NO_ANSWER
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except ValueError:
        return _answer(None, PARSE_ERROR)
    if not isinstance(message, dict):
        return _answer(None, INVALID_REQUEST)
    if "method" not in message and "id" in message and ("result" in message or "error" in message):
        return NO_ANSWER  # a response: nothing of ours is pending, so it is dropped
    if _has_surrogate(message):
        # UTF-8 cannot carry the string, so the frame is refused before it is read as a message.
        if "method" in message and "id" not in message:
            return NO_ANSWER
        return _answer(_usable_id(message), INVALID_REQUEST)
    request_id = _usable_id(message)
    method = message.get("method")
    if message.get("jsonrpc") != "2.0" or type(method) is not str:
        return _answer(request_id, INVALID_REQUEST)
    if "id" not in message:
        return _notification(method, message.get("params"))
    if request_id is None:
        return _answer(None, INVALID_REQUEST)
    outcomes = request_outcomes(method)
    params = message.get("params")
    if METHOD_NOT_FOUND not in outcomes and params is not None and not isinstance(params, dict):
        outcomes = frozenset({INVALID_PARAMS})
    return Expectation(True, request_id, outcomes, method=method)


def _notification(method: str, params: object) -> Expectation:
    if method == CANCEL_REQUEST and isinstance(params, dict):
        target = params.get("requestId")
        if type(target) is int or type(target) is str:
            return Expectation(False, cancel_target=target)
    return NO_ANSWER


@dataclass
class BurstExpectations:
    """The answers a burst of frames must get, keyed like ``RawAgent.responses``."""

    by_key: dict[str, list[Expectation]] = field(default_factory=dict)

    @classmethod
    def of(cls, expectations: Iterable[Expectation]) -> BurstExpectations:
        burst = cls()
        requests: list[Expectation] = []
        for expectation in expectations:
            if expectation.cancel_target is not None:
                requests = [_cancellable(e, expectation.cancel_target) for e in requests]
                continue
            if not expectation.answered:
                continue
            reused = any(_key(r.request_id) == _key(expectation.request_id) for r in requests)
            if expectation.method is not None and reused:
                expectation = _also(expectation, INVALID_REQUEST)
            requests.append(expectation)
        for expectation in requests:
            burst.by_key.setdefault(_key(expectation.request_id), []).append(expectation)
        return burst

    def counts(self) -> Counter[str]:
        return Counter({key: len(found) for key, found in self.by_key.items()})

    def problems(self, responses: Mapping[str, list[dict[str, Any]]]) -> list[str]:
        """Every way ``responses`` (only this burst's) differ from what was expected."""
        found: list[str] = []
        for key in sorted(set(self.by_key) | set(responses)):
            wanted = self.by_key.get(key, [])
            got = responses.get(key, [])
            if len(got) != len(wanted):
                found.append(f"id {key}: {len(got)} responses, expected {len(wanted)}: {got}")
                continue
            for response in got:
                if not any(e.allows(response) for e in wanted):
                    allowed = sorted(set().union(*(e.outcomes for e in wanted)))
                    found.append(f"id {key}: {response} is none of the outcomes {allowed}")
        return found


def _key(request_id: object) -> str:
    return json.dumps(request_id, separators=(",", ":"))


def _also(expectation: Expectation, code: int) -> Expectation:
    return Expectation(
        True, expectation.request_id, expectation.outcomes | {code}, method=expectation.method
    )


def _cancellable(expectation: Expectation, target: object) -> Expectation:
    # Ids compare by JSON identity: True must not withdraw request 1.
    if expectation.method is None or _key(expectation.request_id) != _key(target):
        return expectation
    return _also(expectation, REQUEST_CANCELLED)
