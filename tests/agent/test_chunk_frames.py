"""Updates encoded from templates are byte for byte what the notification model encodes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import Field

from muse_acp.agent.translation.chunk_frames import (
    UPDATE,
    _template,
    encoded_chunk,
    encoded_plain,
    encoded_plain_notification,
    encoded_session_id,
    encoded_update,
    encoded_update_frame,
    encoded_update_json,
)
from muse_acp.agent.translation.translate import PlainChunk
from muse_acp.rpc import encode_notification, encode_value
from muse_acp_wire import acp

KINDS: tuple[tuple[type[acp.SessionUpdate], str], ...] = (
    (acp.UserMessageChunkSessionUpdate, "user_message_chunk"),
    (acp.AgentMessageChunkSessionUpdate, "agent_message_chunk"),
    (acp.AgentThoughtChunkSessionUpdate, "agent_thought_chunk"),
)
ABSENT = object()
"""A message id that is not given at all (unlike ``None``, given as null)."""


def chunk(kind: int, text: str, message_id: object = ABSENT, **extra: Any) -> acp.SessionUpdate:
    model, tag = KINDS[kind]
    members: dict[str, Any] = {
        "session_update": tag,
        "content": acp.TextContentBlock(type="text", text=text),
        **extra,
    }
    if message_id is not ABSENT:
        members["message_id"] = message_id
    return model.model_validate(members, by_name=True)


def by_the_model(session_id: str, update: acp.SessionUpdate) -> bytes:
    return encode_value(acp.SessionNotification(session_id=session_id, update=update))


@settings(max_examples=400, deadline=None)
@given(
    kind=st.integers(0, len(KINDS) - 1),
    session_id=st.text(max_size=40),
    text=st.text(max_size=200),
    message_id=st.one_of(st.just(ABSENT), st.none(), st.text(max_size=40)),
)
def test_a_plain_text_chunk_encodes_exactly_as_the_notification_model_does(
    kind: int, session_id: str, text: str, message_id: object
) -> None:
    update = chunk(kind, text, message_id)
    encoded = encoded_chunk(encoded_session_id(session_id), update)
    assert encoded is not None
    assert encoded.data == by_the_model(session_id, update)
    assert b"\n" not in encoded.data
    assert b"\r" not in encoded.data


@settings(max_examples=300, deadline=None)
@given(
    family=st.sampled_from(["agent", "reasoning", "user"]),
    session_id=st.text(max_size=40),
    text=st.text(max_size=200),
    message_id=st.text(max_size=40),
)
def test_a_chunk_never_built_encodes_exactly_as_its_model_does(
    family: Literal["agent", "reasoning", "user"], session_id: str, text: str, message_id: str
) -> None:
    chunk = PlainChunk(family, message_id, text)
    encoded = encoded_plain(encoded_session_id(session_id), chunk)
    assert encoded is not None
    assert encoded.data == by_the_model(session_id, chunk.model())
    assert b"\n" not in encoded.data
    assert b"\r" not in encoded.data
    # The whole notification too, as ``Connection.notify`` would write it.
    notification = acp.SessionNotification(session_id=session_id, update=chunk.model())
    whole = encoded_plain_notification(encoded_session_id(session_id), chunk)
    assert whole == encode_notification(UPDATE, notification)


def test_control_characters_quotes_and_wide_characters_are_escaped_like_the_model() -> None:
    text = 'a "quoted"\\ line\nnext\r\t\x00\x1f\u2028 ü ✓ 😀'
    update = chunk(1, text, "m-1")
    encoded = encoded_chunk(encoded_session_id("s-\u00e9"), update)
    assert encoded is not None
    assert encoded.data == by_the_model("s-\u00e9", update)
    assert b"\n" not in encoded.data
    assert b"\r" not in encoded.data


@pytest.mark.parametrize(
    "update",
    [
        chunk(1, "x", "m", field_meta={"muse/x": 1}),
        acp.AgentMessageChunkSessionUpdate(
            session_update="agent_message_chunk",
            content=acp.TextContentBlock(
                type="text", text="x", annotations=acp.Annotations(priority=0.5)
            ),
        ),
        acp.AgentMessageChunkSessionUpdate(
            session_update="agent_message_chunk",
            content=acp.TextContentBlock(type="text", text="x", field_meta={"k": "v"}),
        ),
        acp.AgentMessageChunkSessionUpdate(
            session_update="agent_message_chunk",
            content=acp.ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
        ),
        acp.PlanSessionUpdate(session_update="plan", entries=[]),
    ],
    ids=["update _meta", "annotations", "content _meta", "image", "not a chunk"],
)
def test_anything_but_a_plain_text_chunk_is_left_to_the_model(update: acp.SessionUpdate) -> None:
    assert encoded_chunk(encoded_session_id("s"), update) is None


def test_a_subclass_of_a_chunk_kind_is_left_to_the_model() -> None:
    class Wider(acp.AgentMessageChunkSessionUpdate):
        pass

    update = Wider(
        session_update="agent_message_chunk",
        content=acp.TextContentBlock(type="text", text="x"),
    )
    assert encoded_chunk(encoded_session_id("s"), update) is None


def test_a_chunk_kind_without_one_fixed_tag_gets_no_template() -> None:
    # The generated chunk kinds each have one tag; a kind with two would fit no single template,
    # and its chunks would go the model's way rather than fail.
    class TwoTags(acp.AgentMessageChunkSessionUpdate):
        session_update: Annotated[  # type: ignore[assignment]
            Literal["agent_message_chunk", "other"], Field(alias="sessionUpdate")
        ]

    assert _template(TwoTags, True) is None
    assert _template(acp.AgentMessageChunkSessionUpdate, True) is not None


UPDATES: list[acp.SessionUpdate] = [
    chunk(0, "a prompt", "m1"),
    chunk(1, "x", "m", field_meta={"muse/x": 1}),
    acp.AgentMessageChunkSessionUpdate(
        session_update="agent_message_chunk",
        content=acp.ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
    ),
    acp.ToolCallSessionUpdate(
        session_update="tool_call",
        tool_call_id="call-1",
        title="ls -la \u2028\n",
        kind="execute",
        status="completed",
        content=[
            acp.ContentToolCallContent(
                type="content", content=acp.TextContentBlock(type="text", text="out\r\n\x00")
            )
        ],
        locations=[acp.ToolCallLocation(path="/w/a.py", line=3)],
        raw_input={"command": "ls", "n": [1, 2.5, None, True]},
        field_meta={"muse/output": {"outputRef": "r"}},
    ),
    acp.ToolCallUpdateSessionUpdate(
        session_update="tool_call_update", tool_call_id="call-1", title=None, status="failed"
    ),
    acp.PlanSessionUpdate(
        session_update="plan",
        entries=[acp.PlanEntry(content="do it", priority="high", status="pending")],
    ),
    acp.UsageUpdateSessionUpdate(session_update="usage_update", used=5, size=100),
    acp.SessionInfoUpdateSessionUpdate(session_update="session_info_update", title="A title"),
]


@pytest.mark.parametrize("update", UPDATES, ids=lambda update: type(update).__name__)
@pytest.mark.parametrize("session_id", ["s", 'quote " and \u00e9 \n'])
def test_every_update_kind_encodes_exactly_as_the_notification_model_does(
    update: acp.SessionUpdate, session_id: str
) -> None:
    encoded = encoded_update(encoded_session_id(session_id), update)
    assert encoded is not None
    assert encoded.data == by_the_model(session_id, update)
    assert b"\n" not in encoded.data


@pytest.mark.parametrize("update", UPDATES, ids=lambda update: type(update).__name__)
@pytest.mark.parametrize("session_id", ["s", 'quote " and \u00e9 \n'])
def test_an_update_encoded_already_goes_in_the_notification_the_model_would_write(
    update: acp.SessionUpdate, session_id: str
) -> None:
    own = update.__pydantic_serializer__.to_json(update, by_alias=True, exclude_unset=True)
    params = encoded_update_json(encoded_session_id(session_id), own)
    assert params is not None
    assert params.data == by_the_model(session_id, update)
    notification = acp.SessionNotification(session_id=session_id, update=update)
    frame = encoded_update_frame(encoded_session_id(session_id), own)
    assert frame == encode_notification(UPDATE, notification)


def test_a_subclass_of_an_update_kind_is_left_to_the_model() -> None:
    # The notification would encode a subclass with its parent's schema, leaving out what the
    # subclass adds; its own encoding would not be the notification's.
    class Wider(acp.PlanSessionUpdate):
        extra: int = 1

    update = Wider(session_update="plan", entries=[], extra=2)
    assert encoded_update(encoded_session_id("s"), update) is None
