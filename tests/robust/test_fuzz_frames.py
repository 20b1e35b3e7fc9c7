"""Hostile frames on the agent's stdin: it answers each request once, correctly, and lives on.

One ``muse-acp serve`` serves the whole module. Every burst is checked against the oracle: the
number of responses per id (``id: null`` included), their error codes, that notifications and
responses get no answer, that no error leaks internals, and that every stdout line is a frame;
after each burst the agent must still answer a valid request, and after all of them it must
still create a session and run a prompt.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from muse_acp.rpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RESOURCE_NOT_FOUND,
)

from .checks import deliver, problems_in
from .frames import Burst, bursts
from .oracle import RESULT, BurstExpectations, Expectation, expect
from .profiles import fuzz_settings
from .rawagent import RawAgent

pytestmark = pytest.mark.anyio

MAX_FRAME_BYTES = 16 * 1024 * 1024
NESTING_LIMIT = 128
"""How deep a frame may nest; the runtime's limit, restated as the promise tested here."""


def expectations_of(wire: bytes) -> BurstExpectations:
    return BurstExpectations.of(expect(line) for line in wire.split(b"\n"))


async def check_burst(
    agent: RawAgent, pieces: list[bytes], expected: BurstExpectations
) -> dict[str, list[dict[str, Any]]]:
    first_line = len(agent.lines)
    responses = await deliver(agent, pieces, expected)
    assert expected.problems(responses) == []
    assert problems_in(agent.lines[first_line:]) == []
    assert agent.alive
    return responses


async def check_still_serving(agent: RawAgent) -> None:
    session_id = await agent.new_session()
    answer = await agent.prompt_text(session_id, "still there?")
    assert answer.get("result") == {"stopReason": "end_turn"}, answer


@fuzz_settings(quick=150)
@given(bursts())
async def test_random_frame_bursts_are_each_answered_once_and_the_agent_keeps_serving(
    agent: RawAgent, burst: Burst
) -> None:
    await check_burst(agent, list(burst.pieces), expectations_of(burst.wire))
    await agent.initialize()


def _line(text: str) -> bytes:
    return text.encode() + b"\n"


def req(request_id: str, method: str, params: str | None = None) -> bytes:
    """One request line; ``params`` is raw JSON text."""
    tail = "" if params is None else f',"params":{params}'
    return _line(f'{{"jsonrpc":"2.0","id":"{request_id}","method":"{method}"{tail}}}')


def note(method: str, params: str) -> bytes:
    """One notification line; ``params`` is raw JSON text."""
    return _line(f'{{"jsonrpc":"2.0","method":"{method}","params":{params}}}')


def nested(depth: int) -> str:
    return "[" * depth + "0" + "]" * depth


def case(name: str, wire: bytes, *answers: tuple[object, int]) -> Any:
    return pytest.param(wire, list(answers), id=name)


NULL = None
FIXED_BURSTS = [
    case("bad-json", b"{not json}\n", (NULL, PARSE_ERROR)),
    case("nul", b'{"jsonrpc":"2.0","id":"n","method":"x"\x00}\n', (NULL, PARSE_ERROR)),
    case("utf8", b'{"jsonrpc":"2.0","id":"u","method":"\xff"}\n', (NULL, PARSE_ERROR)),
    case("bom", b"\xef\xbb\xbf" + req("bom", "x"), (NULL, PARSE_ERROR)),
    case("nan", req("nan", "initialize", '{"protocolVersion":NaN}'), (NULL, PARSE_ERROR)),
    case("blank-lines", b"\n\r\n  \n\t\r\n"),
    case("crlf", req("crlf", "_x")[:-1] + b"\r\n", ("crlf", METHOD_NOT_FOUND)),
    case("extension", req("ext", "_vendor/thing", "{}"), ("ext", METHOD_NOT_FOUND)),
    case("underscore", req("under", "_"), ("under", METHOD_NOT_FOUND)),
    case("array-params", req("np", "session/new", "[1,2]"), ("np", INVALID_PARAMS)),
    case("string-params", req("sp", "session/prompt", '"text"'), ("sp", INVALID_PARAMS)),
    case(
        "wrong-types",
        req("wt", "session/new", '{"cwd":7,"mcpServers":{}}'),
        ("wt", INVALID_PARAMS),
    ),
    case(
        "minus-1e999",
        req("pv", "initialize", '{"protocolVersion":-1e999}'),
        ("pv", INVALID_PARAMS),
    ),
    case(
        "huge-id",
        _line('{"jsonrpc":"2.0","id":1' + "0" * 400 + ',"method":"_x"}'),
        (10**400, METHOD_NOT_FOUND),
    ),
    case("1e999-id", _line('{"jsonrpc":"2.0","id":1e999,"method":"_x"}'), (NULL, INVALID_REQUEST)),
    case(
        "huge-number",
        req("big", "initialize", '{"protocolVersion":1' + "0" * 400 + "}"),
        ("big", INVALID_PARAMS),
    ),
    case(
        "unknown-session",
        req("gone", "session/set_mode", '{"sessionId":"s1","modeId":"x"}'),
        ("gone", RESOURCE_NOT_FOUND),
    ),
    case(
        "batch",
        b"[" + req("b1", "_x")[:-1] + b"," + req("b2", "_x")[:-1] + b"]\n",
        (NULL, INVALID_REQUEST),
    ),
    case("empty-batch", b"[]\n", (NULL, INVALID_REQUEST)),
    case("duplicate-ids", req("dup", "_x") * 3, *[("dup", METHOD_NOT_FOUND)] * 3),
    case(
        "notifications",
        note("session/cancel", '{"sessionId":"s"}')
        + note("_vendor/note", "5")
        + note("$/cancel_request", '{"requestId":"none"}'),
    ),
    case(
        "stray-responses",
        _line('{"jsonrpc":"2.0","id":"r","result":{}}')
        + _line('{"jsonrpc":"2.0","id":99,"error":{"code":1,"message":"m"}}'),
    ),
    case(
        "nesting-at-limit",
        req("deep-ok", "_x", nested(NESTING_LIMIT - 1)),
        ("deep-ok", METHOD_NOT_FOUND),
    ),
    case(
        "nesting-over-limit",
        req("deep", "_x", nested(NESTING_LIMIT)),
        ("deep", INVALID_REQUEST),
    ),
    case("nesting-5000", req("deeper", "initialize", nested(5000)), ("deeper", INVALID_REQUEST)),
    case("deep-notification", note("_n", nested(5000))),
    case("deep-array", _line(nested(100_000)), (NULL, INVALID_REQUEST)),
    case("5000-digits", req("digits", "_x", "1" * 5000), ("digits", INVALID_REQUEST)),
    case("lone-surrogate", req("sur", "_x", '"\\ud800"'), ("sur", INVALID_REQUEST)),
    case(
        "surrogate-id",
        _line('{"jsonrpc":"2.0","id":"\\udfff","method":"_x"}'),
        (NULL, INVALID_REQUEST),
    ),
    case("surrogate-pair", req("pair", "_x", '"\\ud83d\\ude00"'), ("pair", METHOD_NOT_FOUND)),
    case("long-method", req("long", "x" * 100_000), ("long", METHOD_NOT_FOUND)),
    case(
        "long-cwd",
        req("lc", "session/new", f'{{"cwd":"{"x" * 100_000}","mcpServers":[]}}'),
        ("lc", INVALID_PARAMS),
    ),
    case(
        "long-absolute-cwd",
        req("la", "session/list", f'{{"cwd":"/{"x" * 100_000}"}}'),
        ("la", INVALID_PARAMS),
    ),
    case(
        "long-auth",
        req("lm", "authenticate", f'{{"methodId":"{"x" * 100_000}"}}'),
        ("lm", INVALID_PARAMS),
    ),
    case(
        "long-session-id",
        req("ls", "session/set_mode", f'{{"sessionId":"{"x" * 100_000}","modeId":"m"}}'),
        ("ls", INVALID_PARAMS),
    ),
]


@pytest.mark.parametrize(("wire", "answers"), FIXED_BURSTS)
async def test_each_kind_of_bad_frame_gets_its_one_answer(
    agent: RawAgent, wire: bytes, answers: list[tuple[object, int]]
) -> None:
    expected = BurstExpectations.of(
        Expectation(True, request_id, frozenset({code}), method="fixed")
        for request_id, code in answers
    )
    await check_burst(agent, [wire], expected)
    await agent.initialize()


async def test_frames_split_at_every_byte_are_read_whole(agent: RawAgent) -> None:
    wire = req("split-1", "_a") + b"\r\n" + req("split-2", "_b")
    pieces = [wire[i : i + 1] for i in range(len(wire))]
    await check_burst(agent, pieces, expectations_of(wire))


async def test_an_oversized_line_is_refused_and_the_next_frame_is_served(agent: RawAgent) -> None:
    padding = b"x" * (MAX_FRAME_BYTES + 1)
    wire = b'{"jsonrpc":"2.0","id":"huge","method":"_x","params":"' + padding + b'"}\n'
    pieces = [wire[i : i + 1024 * 1024] for i in range(0, len(wire), 1024 * 1024)]
    pieces.append(req("after-huge", "_x"))
    expected = BurstExpectations.of(
        [
            Expectation(True, None, frozenset({INVALID_REQUEST}), method="fixed"),
            Expectation(True, "after-huge", frozenset({METHOD_NOT_FOUND}), method="fixed"),
        ]
    )
    await check_burst(agent, pieces, expected)
    await check_still_serving(agent)


async def test_a_request_reusing_the_id_of_one_in_progress_gets_its_own_answer(
    agent: RawAgent,
) -> None:
    # The second frame is read while the first request waits for its host to start: the
    # first is registered before the next frame is read, so the reuse is always seen.
    wire = req("same", "session/list", "{}") * 2
    expected = BurstExpectations.of(
        Expectation(True, "same", frozenset({RESULT, INVALID_REQUEST}), method="fixed")
        for _ in range(2)
    )
    responses = await check_burst(agent, [wire], expected)
    codes = sorted(r.get("error", {}).get("code", RESULT) for r in responses['"same"'])
    assert codes == [INVALID_REQUEST, RESULT]


async def test_after_every_burst_the_agent_still_runs_a_session(agent: RawAgent) -> None:
    await check_still_serving(agent)
