"""``session/update`` params encoded without building and serializing a notification.

Contract: ``encoded_chunk(session_id, update)`` returns the params of ``session/update`` as
``RawJson`` when ``update`` is a plain text chunk (a user, agent or thought chunk of only
``sessionUpdate``, a text ``content`` and an optional ``messageId``), else None.
``encoded_plain`` does the same for a ``translate.PlainChunk`` whose model was never built, and
``encoded_plain_notification`` gives the whole notification. ``encoded_update`` gives the params
of any update whose type is exactly one of ``acp.SessionUpdate``'s, its own encoding put in the
notification's, else None, and the caller encodes the model as usual (``encoded_update_json``
and, the whole notification, ``encoded_update_frame``: of an update encoded already). The bytes
are exactly those the ``acp.SessionNotification`` model encodes to: each template is cut once
out of a sample notification's encoding, and the values are encoded by pydantic-core
(``tests/agent/test_chunk_frames.py`` compares the two).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Final, TypeGuard, get_args

from pydantic_core import to_json

from muse_acp.agent.translation.translate import PlainChunk, TextChunk, TextFamily
from muse_acp.rpc import RawJson, encode_notification, encode_value
from muse_acp_wire import acp

__all__ = [
    "UPDATE",
    "encoded_chunk",
    "encoded_plain",
    "encoded_plain_notification",
    "encoded_session_id",
    "encoded_update",
    "encoded_update_frame",
    "encoded_update_json",
]

UPDATE: Final = "session/update"

_SESSION_MARK: Final = "\x00session\x00"
_TEXT_MARK: Final = "\x00text\x00"
_MESSAGE_MARK: Final = "\x00message\x00"


_CHUNK_KINDS: Final = get_args(TextChunk)
_UPDATE_KINDS: Final = frozenset(get_args(acp.SessionUpdate))


def _is_chunk(update: acp.SessionUpdate) -> TypeGuard[TextChunk]:
    # The exact type: a subclass may add members, and ``type`` costs far less than a model
    # class's ``isinstance``.
    return type(update) in _CHUNK_KINDS


@dataclass(frozen=True, slots=True)
class _Template:
    """The encoded notification of one chunk kind, cut where its values go."""

    members: frozenset[str]
    """The update's members, Python names, that a chunk of this template has set."""
    text_members: frozenset[str]
    """The content's members that are set: ``type`` and ``text``."""
    pieces: tuple[bytes, ...]
    """The bytes around the values: the session id, the text and, when the template has one,
    the message id."""
    frame_pieces: tuple[bytes, ...]
    """``pieces`` inside the whole notification, as ``encode_notification`` writes it."""

    def fill(self, session_id: bytes, text: str, message_id: str | None) -> RawJson:
        # Every piece is pydantic-core's compact JSON, so the text holds no raw line break.
        return RawJson.encoded(_join(self.pieces, session_id, text, message_id))

    def frame(self, session_id: bytes, text: str, message_id: str | None) -> bytes:
        return _join(self.frame_pieces, session_id, text, message_id)


def _join(pieces: tuple[bytes, ...], session_id: bytes, text: str, message_id: str | None) -> bytes:
    if len(pieces) == 3:
        return b"".join((pieces[0], session_id, pieces[1], to_json(text), pieces[2]))
    return b"".join(
        (
            pieces[0],
            session_id,
            pieces[1],
            to_json(text),
            pieces[2],
            to_json(message_id),
            pieces[3],
        )
    )


@cache
def _template(kind: type[acp.SessionUpdate], with_message_id: bool) -> _Template | None:
    """The template of ``kind``, or None when its encoding does not hold the values in the
    order they are filled in (then every chunk of that kind takes the model's way)."""
    tags = get_args(kind.model_fields["session_update"].annotation)
    if len(tags) != 1:
        return None  # not one fixed tag: no single template fits
    (tag,) = tags
    content = acp.TextContentBlock(type="text", text=_TEXT_MARK)
    members = {"session_update": tag, "content": content}
    if with_message_id:
        members["message_id"] = _MESSAGE_MARK
    sample = kind.model_validate(members, by_name=True)
    encoded = encode_value(acp.SessionNotification(session_id=_SESSION_MARK, update=sample))
    marks = [_SESSION_MARK, _TEXT_MARK] + ([_MESSAGE_MARK] if with_message_id else [])
    pieces: list[bytes] = []
    rest = encoded
    for mark in marks:
        before, found, rest = rest.partition(to_json(mark))
        if not found:
            return None
        pieces.append(before)
    pieces.append(rest)
    # The notification around the params, as ``Connection.notify`` encodes it.
    head, _, tail = encode_notification(UPDATE, RawJson(b"null")).rpartition(b"null")
    frame_pieces = (head + pieces[0], *pieces[1:-1], pieces[-1] + tail)
    return _Template(
        frozenset(sample.model_fields_set),
        frozenset(content.model_fields_set),
        tuple(pieces),
        frame_pieces,
    )


@cache
def _family_template(family: TextFamily) -> _Template | None:
    """The template of the chunk model ``translate`` builds for ``family``, with a message id."""
    sample = PlainChunk(family, "", "").model()
    return _template(type(sample), True)


def encoded_session_id(session_id: str) -> bytes:
    """``session_id`` as ``encoded_chunk`` takes it (a session encodes its id once)."""
    return to_json(session_id)


def encoded_chunk(session_id: bytes, update: acp.SessionUpdate) -> RawJson | None:
    """The ``session/update`` params for a plain text chunk, or None (see the contract);
    ``session_id`` comes from ``encoded_session_id``."""
    if not _is_chunk(update):
        return None
    content = update.content
    if type(content) is not acp.TextContentBlock:
        return None
    members = update.model_fields_set
    template = _template(type(update), "message_id" in members)
    if (
        template is None
        or members != template.members
        or content.model_fields_set != template.text_members
    ):
        return None
    return template.fill(session_id, content.text, update.message_id)


def encoded_plain_notification(session_id: bytes, chunk: PlainChunk) -> bytes | None:
    """The whole ``session/update`` notification of ``chunk.model()``, as ``encode_notification``
    writes it, built from the chunk's values alone, or None when that kind has no template."""
    template = _family_template(chunk.family)
    if template is None:
        return None
    return template.frame(session_id, chunk.text, chunk.message_id)


def encoded_plain(session_id: bytes, chunk: PlainChunk) -> RawJson | None:
    """The ``session/update`` params for ``chunk.model()``, built from the chunk's values alone,
    or None when that kind has no template; ``session_id`` comes from ``encoded_session_id``."""
    template = _family_template(chunk.family)
    if template is None:
        return None
    return template.fill(session_id, chunk.text, chunk.message_id)


@cache
def _notification_pieces() -> tuple[bytes, bytes, bytes] | None:
    """The encoded notification params around its session id and its update, cut out of a
    sample's encoding, or None when the sample's update is not found in it whole."""
    sample = acp.CurrentModeUpdateSessionUpdate(
        session_update="current_mode_update", current_mode_id=_TEXT_MARK
    )
    encoded = encode_value(acp.SessionNotification(session_id=_SESSION_MARK, update=sample))
    head, found, tail = encoded.partition(encode_value(sample))
    if not found:
        return None
    before, found, between = head.partition(to_json(_SESSION_MARK))
    if not found:
        return None
    return before, between, tail


def encoded_update(session_id: bytes, update: acp.SessionUpdate) -> RawJson | None:
    """The ``session/update`` params of ``update``, or None (see the contract);
    ``session_id`` comes from ``encoded_session_id``."""
    # The exact type: the notification encodes its update with the schema of the variant its
    # tag names, which is the update's own only when it is that very class.
    if type(update) not in _UPDATE_KINDS:
        return None
    pieces = _notification_pieces()
    if pieces is None:
        return None
    encoded = update.__pydantic_serializer__.to_json(update, by_alias=True, exclude_unset=True)
    # Every piece is pydantic-core's compact JSON, so it holds no raw line break.
    return RawJson.encoded(b"".join((pieces[0], session_id, pieces[1], encoded, pieces[2])))


@cache
def _notification_frame_pieces() -> tuple[bytes, bytes, bytes] | None:
    """``_notification_pieces`` with the notification around the params, as
    ``Connection.notify`` encodes it."""
    pieces = _notification_pieces()
    if pieces is None:
        return None
    head, _, tail = encode_notification(UPDATE, RawJson(b"null")).rpartition(b"null")
    return head + pieces[0], pieces[1], pieces[2] + tail


def encoded_update_frame(session_id: bytes, update: bytes) -> bytes | None:
    """The whole ``session/update`` notification, as ``encode_notification`` writes it, of an
    update given as its encoding (as ``encoded_update_json``), or None."""
    pieces = _notification_frame_pieces()
    if pieces is None:
        return None
    return b"".join((pieces[0], session_id, pieces[1], update, pieces[2]))


def encoded_update_json(session_id: bytes, update: bytes) -> RawJson | None:
    """``encoded_update`` of an update given as its encoding (pydantic-core's compact JSON of
    the update's model, by alias and without unset members), or None."""
    pieces = _notification_pieces()
    if pieces is None:
        return None
    return RawJson.encoded(b"".join((pieces[0], session_id, pieces[1], update, pieces[2])))
