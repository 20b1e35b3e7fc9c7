"""Prompt content: ACP content blocks to Muse ``turn/start`` input parts, checked in full.

Contract: ``convert_prompt`` is pure (no I/O; a URI is never fetched) and returns the input parts
for a whole prompt, in the blocks' order, before any turn starts (``session/prompt`` and every
steering method). Text passes verbatim; resource links and embedded text or octet-stream blobs
become attributed text parts; images become MSP image parts, their bytes never inspected.
Base64 must be strict and canonical, so the host sees exactly what was checked; per prompt,
image bytes are bounded by ``MAX_IMAGE_BYTES`` and embedded context by ``MAX_EMBEDDED_BYTES``.

Errors: ``RpcError`` INVALID_PARAMS naming the first offending block by 1-based position and ACP
type, the rule it broke and what is accepted (audio, other blobs, malformed resources, unknown
block types, bad or oversized base64).
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from muse_acp.rpc.errors import RpcError
from muse_acp.text import clip, quoted
from muse_acp_wire import acp, msp

__all__ = [
    "BINARY_MIME_TYPES",
    "IMAGE_MIME_TYPES",
    "MAX_EMBEDDED_BYTES",
    "MAX_IMAGE_BYTES",
    "convert_prompt",
    "refuse_ambiguous_resources",
]

MAX_IMAGE_BYTES: Final = 6 * 1024 * 1024
"""Most decoded image bytes (image blocks and embedded images together) in one prompt."""
MAX_EMBEDDED_BYTES: Final = 64 * 1024
"""Most UTF-8 bytes of embedded-context text parts (links and plain text excluded) per prompt."""
IMAGE_MIME_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Normalised MIME types sent to Muse as images."""
BINARY_MIME_TYPES: Final = frozenset({"application/octet-stream", "text/plain"})
"""Normalised MIME types of embedded blobs passed on as base64 text."""

_LINK_LABEL: Final = "Attached resource link (not fetched):"
_TEXT_RESOURCE_LABEL: Final = "Attached text resource:"
_IMAGE_HEADER_LABEL: Final = "Attached image resource (the image itself is the next input part):"
_BINARY_LABEL: Final = "Attached binary resource (base64 bytes, not decoded):"
_BINARY_NOTE: Final = (
    "The blob holds the resource's raw bytes in base64; they were not decoded into document text."
)

_ACCEPTED_BLOCKS: Final = "send text, resource_link, resource or image blocks"
_IMAGE_TYPES_TEXT: Final = ", ".join(sorted(IMAGE_MIME_TYPES))
_BLOB_TYPES_TEXT: Final = ", ".join(sorted(IMAGE_MIME_TYPES) + sorted(BINARY_MIME_TYPES))
_BASE64_HINT: Final = "send standard-alphabet base64 with '=' padding and no whitespace"
# Peer-chosen strings quoted in an error are cut so a message stays short.
_QUOTE_LIMIT: Final = 64
_BASE64_ALPHABET: Final = re.compile(r"[A-Za-z0-9+/=]*")
_BASE64_TEXT: Final = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_JSON_SEPARATORS: Final = (",", ":")


def convert_prompt(blocks: Sequence[acp.ContentBlock]) -> list[msp.TurnInputPart]:
    """Return the ``turn/start`` input parts for ``blocks``, in order.

    Raises:
        RpcError: INVALID_PARAMS when the prompt is empty or has nothing but blank text, or
            when a block is of an unsupported kind, malformed, or over a per-prompt limit.
    """
    if not blocks:
        raise RpcError.invalid_params(f"the prompt has no content blocks; {_ACCEPTED_BLOCKS}")
    budget = _Budget()
    parts: list[msp.TurnInputPart] = []
    substantial = False
    for position, block in enumerate(blocks, start=1):
        if isinstance(block, acp.TextContentBlock):
            parts.append(_text(block.text))
            substantial = substantial or bool(block.text.strip())
            continue
        if isinstance(block, acp.ResourceLinkContentBlock):
            parts.append(_attributed(_LINK_LABEL, _members(block, exclude={"type"})))
        elif isinstance(block, acp.ImageContentBlock):
            parts.append(_image_block(block, _Where(position, "image"), budget))
        elif isinstance(block, acp.ResourceContentBlock):
            parts.extend(_resource(block, _Where(position, "resource"), budget))
        elif isinstance(block, acp.AudioContentBlock):
            raise _Where(position, "audio").reject(
                f"audio is not supported by Muse, so no turn was started; {_ACCEPTED_BLOCKS}"
            )
        else:
            raise _Where(position, _type_name(block)).reject(
                f"this content type is not supported; {_ACCEPTED_BLOCKS}"
            )
        substantial = True
    if not substantial:
        raise RpcError.invalid_params(
            "the prompt holds only blank text; add non-blank text, a resource_link, "
            "a resource or an image"
        )
    return parts


@dataclass(frozen=True, slots=True)
class _Where:
    """The block a rejection is about: its 1-based position and ACP type."""

    position: int
    kind: str

    def reject(self, problem: str) -> RpcError:
        return RpcError.invalid_params(f"prompt block {self.position} ({self.kind}): {problem}")


@dataclass(slots=True)
class _Budget:
    """What the prompt has spent so far of its per-prompt limits."""

    image_bytes: int = 0
    embedded_bytes: int = 0

    def take_image(self, where: _Where, size: int) -> None:
        if self.image_bytes + size > MAX_IMAGE_BYTES:
            raise where.reject(
                f"the prompt's images would decode to more than {MAX_IMAGE_BYTES} bytes "
                "(6 MiB), the limit per prompt; send fewer or smaller images"
            )
        self.image_bytes += size

    def take_embedded(self, where: _Where, text: str) -> None:
        room = MAX_EMBEDDED_BYTES - self.embedded_bytes
        # A character is at least one byte, so a long text is refused without encoding it;
        # surrogatepass keeps a lone surrogate from a peer countable instead of fatal.
        size = len(text) if len(text) > room else len(text.encode("utf-8", "surrogatepass"))
        if size > room:
            raise _over_embedded(where)
        self.embedded_bytes += size

    def check_embedded_room(self, where: _Where, least_size: int) -> None:
        if self.embedded_bytes + least_size > MAX_EMBEDDED_BYTES:
            raise _over_embedded(where)


def _over_embedded(where: _Where) -> RpcError:
    return where.reject(
        f"the prompt's embedded context would exceed {MAX_EMBEDDED_BYTES} bytes (64 KiB) of "
        "serialized UTF-8, the limit per prompt; attach less or send a resource_link instead"
    )


def _text(text: str) -> msp.TextTurnInputPart:
    return msp.TextTurnInputPart(type="text", text=text)


def _image_part(base64_data: str, media_type: str) -> msp.ImageTurnInputPart:
    return msp.ImageTurnInputPart(type="image", base64_data=base64_data, media_type=media_type)


def _attributed(label: str, members: Mapping[str, Any]) -> msp.TextTurnInputPart:
    body = json.dumps(members, ensure_ascii=False, separators=_JSON_SEPARATORS)
    return _text(f"{label}\n{body}")


def _members(
    model: BaseModel, *, include: set[str] | None = None, exclude: set[str] | None = None
) -> dict[str, Any]:
    """The model's wire members the peer set (``include``/``exclude`` take field names)."""
    return model.model_dump(
        mode="json", by_alias=True, exclude_unset=True, include=include, exclude=exclude
    )


def _block_members(block: acp.ResourceContentBlock) -> dict[str, Any]:
    # Only these two: dumping the resource too would copy a blob of megabytes.
    return _members(block, include={"annotations", "field_meta"})


def _normalise(mime_type: str) -> str:
    return mime_type.strip().lower()


def _quote(text: str) -> str:
    return quoted(text, _QUOTE_LIMIT)


def _type_name(block: object) -> str:
    # Only a block built without validation gets here; its tag is read for the message alone.
    tag = getattr(block, "type", None)
    return clip(tag, _QUOTE_LIMIT) if isinstance(tag, str) else type(block).__name__


def _decoded_size(data: str) -> int:
    """The byte count ``data`` decodes to if it is valid base64, known before decoding."""
    padding = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return max(len(data) // 4 * 3 - padding, 0)


def _check_base64(where: _Where, member: str, data: str) -> None:
    """Decode ``data`` once, refusing anything but strict, canonical base64."""
    if not _BASE64_ALPHABET.fullmatch(data):
        reason = "it has a character outside the standard alphabet (whitespace included)"
    elif not _BASE64_TEXT.fullmatch(data):
        reason = "its '=' padding is misplaced"
    elif len(data) % 4:
        reason = "its length is not a multiple of 4"
    else:
        try:
            raw = binascii.a2b_base64(data, strict_mode=True)
        except binascii.Error:
            reason = "it does not decode"
        else:
            if binascii.b2a_base64(raw, newline=False) == data.encode("ascii"):
                return
            reason = "it is not canonical (the bits after the last byte are not zero)"
    raise where.reject(f"{member} is not strict base64: {reason}; {_BASE64_HINT}")


def _image_block(block: acp.ImageContentBlock, where: _Where, budget: _Budget) -> msp.TurnInputPart:
    media_type = _normalise(block.mime_type)
    if media_type not in IMAGE_MIME_TYPES:
        raise where.reject(
            f"MIME type {_quote(block.mime_type)} is not accepted; image blocks must be one of "
            f"{_IMAGE_TYPES_TEXT}"
        )
    return _image(block.data, media_type, where, budget, member="data")


def _image(
    data: str, media_type: str, where: _Where, budget: _Budget, *, member: str
) -> msp.TurnInputPart:
    if not data:
        raise where.reject(f"{member} is empty; an image needs at least one byte")
    budget.take_image(where, _decoded_size(data))
    _check_base64(where, member, data)
    return _image_part(data, media_type)


def _resource(
    block: acp.ResourceContentBlock, where: _Where, budget: _Budget
) -> list[msp.TurnInputPart]:
    contents = _contents(block.resource, where)
    if isinstance(contents, acp.TextResourceContents):
        return [_text_resource(block, contents, where, budget)]
    return _blob_resource(block, contents, where, budget)


def _carries(carried: str) -> str:
    return (
        f"an embedded resource must carry exactly one of text or blob, and this one carries "
        f"{carried}"
    )


def refuse_ambiguous_resources(raw_prompt: object) -> None:
    """Refuse a raw prompt (JSON, before validation) with a resource carrying text and blob.

    Validation keeps one variant of the resource union and drops members it does not know, so
    afterwards such a resource looks like a text resource and its blob would vanish unnoticed.

    Raises:
        RpcError: INVALID_PARAMS naming the block, worded as ``convert_prompt`` words it.
    """
    if not isinstance(raw_prompt, list):
        return
    for position, block in enumerate(raw_prompt, start=1):
        if not isinstance(block, dict) or block.get("type") != "resource":
            continue
        resource = block.get("resource")
        if isinstance(resource, dict) and "text" in resource and "blob" in resource:
            raise _Where(position, "resource").reject(_carries("both"))


def _contents(
    resource: object, where: _Where
) -> acp.TextResourceContents | acp.BlobResourceContents:
    """The resource's contents, refused unless it carries exactly one of ``text``/``blob``."""
    if isinstance(resource, BaseModel):
        present = resource.model_fields_set | set(resource.model_extra or ())
    elif isinstance(resource, Mapping):
        present = set(resource)
    else:
        present = set()
    has_text, has_blob = "text" in present, "blob" in present
    if has_text == has_blob:
        raise where.reject(_carries("both" if has_text else "neither"))
    if isinstance(resource, acp.TextResourceContents | acp.BlobResourceContents):
        return resource
    # A block built without validation: its resource gets the wire model's checks here.
    model = acp.TextResourceContents if has_text else acp.BlobResourceContents
    members = resource.model_dump(by_alias=True) if isinstance(resource, BaseModel) else resource
    try:
        return model.model_validate(members)
    except ValidationError:
        raise where.reject(
            "its resource is malformed; an embedded resource needs a string uri and a string "
            "text or blob"
        ) from None


def _text_resource(
    block: acp.ResourceContentBlock,
    contents: acp.TextResourceContents,
    where: _Where,
    budget: _Budget,
) -> msp.TurnInputPart:
    if not contents.uri:
        raise where.reject("an embedded text resource needs a non-empty uri")
    resource = _members(contents, include={"uri", "mime_type", "text", "field_meta"})
    # Our member order, not the model's: uri and type come before the (possibly long) text.
    ordered = {
        key: resource[key] for key in ("uri", "mimeType", "text", "_meta") if key in resource
    }
    part = _attributed(_TEXT_RESOURCE_LABEL, {"resource": ordered, **_block_members(block)})
    budget.take_embedded(where, part.text)
    return part


def _blob_resource(
    block: acp.ResourceContentBlock,
    contents: acp.BlobResourceContents,
    where: _Where,
    budget: _Budget,
) -> list[msp.TurnInputPart]:
    if not contents.uri or not contents.mime_type or not contents.mime_type.strip():
        raise where.reject(
            f"an embedded blob needs a non-empty uri and mimeType; accepted blob types are "
            f"{_BLOB_TYPES_TEXT}"
        )
    media_type = _normalise(contents.mime_type)
    resource_meta = _members(contents, include={"field_meta"})
    if media_type in IMAGE_MIME_TYPES:
        image = _image(contents.blob, media_type, where, budget, member="blob")
        resource = {"uri": contents.uri, "mimeType": media_type, **resource_meta}
        header = _attributed(_IMAGE_HEADER_LABEL, {"resource": resource, **_block_members(block)})
        budget.take_embedded(where, header.text)
        return [header, image]
    if media_type not in BINARY_MIME_TYPES:
        raise where.reject(
            f"embedded blobs of MIME type {_quote(contents.mime_type)} are not accepted, as "
            f"documents and audio are not decoded; accepted blob types are {_BLOB_TYPES_TEXT}"
        )
    # The part carries the blob itself, so a blob longer than the room left cannot fit.
    budget.check_embedded_room(where, len(contents.blob))
    _check_base64(where, "blob", contents.blob)
    binary = {
        "uri": contents.uri,
        "mimeType": media_type,
        "encoding": "base64",
        "blob": contents.blob,
        **resource_meta,
    }
    part = _attributed(
        _BINARY_LABEL, {"resource": binary, "note": _BINARY_NOTE, **_block_members(block)}
    )
    budget.take_embedded(where, part.text)
    return [part]
