"""Hypothesis strategies for prompt content blocks, each known to be acceptable or not.

Contract: ``blocks()`` draws a ``Block``: one raw JSON content block as a client would send it
and whether muse-acp must accept it. Acceptable blocks cover every supported kind (text of any
Unicode, resource links, embedded text, images and embedded images with canonical base64 and
any spelling of a supported MIME type, binary blobs), with random ``_meta`` holding raw numbers
such as ``-1e999``; sizes stay far below the per-prompt limits, so a prompt of acceptable blocks
is acceptable unless it has nothing but blank text. Unacceptable blocks break exactly one rule:
an unsupported kind, a wrong or missing member, bad or non-canonical base64, an unsupported MIME
type, a resource with both or neither of ``text`` and ``blob``.

Texts never hold ``sim:`` (the simulator would read it as a script) and never start with ``/``
(a lone text block would be a local command, and ``/logout`` closes every session).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Final

from hypothesis import strategies as st

from .frames import Raw, json_values, mostly

__all__ = ["Block", "blocks", "prompt_is_acceptable"]

IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/gif", "image/webp")
BINARY_TYPES: Final = ("application/octet-stream", "text/plain")


@dataclass(frozen=True, slots=True)
class Block:
    """A raw content block and whether it must be accepted."""

    json: Any
    acceptable: bool


def _safe(text: str) -> str:
    text = text.replace("sim:", "sim ")
    return "t" + text if text.lstrip().startswith("/") else text


texts: Final = st.text(max_size=200).map(_safe)
uris: Final = st.text(min_size=1, max_size=40) | st.sampled_from(
    ("file:///etc/passwd", "https://example.com/a?b=c", "../../x", "data:,x")
)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _spelled(mime: str) -> st.SearchStrategy[str]:
    return st.sampled_from((mime, mime.upper(), f" {mime} ", mime.title()))


_META_VALUES: Final = json_values(4) | st.sampled_from((Raw("-1e999"), Raw("1e999")))
_META: Final = st.fixed_dictionaries(
    {}, optional={"_meta": st.dictionaries(st.text(max_size=6), _META_VALUES, max_size=3)}
)


def _with_meta(block: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    return {**block, **meta}


_TEXT: Final = st.builds(lambda t, m: _with_meta({"type": "text", "text": t}, m), texts, _META)
_LINK: Final = st.builds(
    lambda uri, name, extra, m: _with_meta(
        {"type": "resource_link", "uri": uri, "name": name, **extra}, m
    ),
    uris,
    st.text(max_size=30),
    st.fixed_dictionaries(
        {},
        optional={
            "title": st.text(max_size=20),
            "mimeType": st.text(max_size=20),
            "size": st.integers(min_value=0, max_value=2**53),
        },
    ),
    _META,
)
_TEXT_RESOURCE: Final = st.builds(
    lambda uri, body: {"type": "resource", "resource": {"uri": uri, "text": body}},
    uris,
    st.text(max_size=300),
)
_IMAGE: Final = st.builds(
    lambda data, mime: {"type": "image", "data": _b64(data), "mimeType": mime},
    st.binary(min_size=1, max_size=600),
    st.sampled_from(IMAGE_TYPES).flatmap(_spelled),
)
_EMBEDDED_IMAGE: Final = st.builds(
    lambda uri, data, mime: {
        "type": "resource",
        "resource": {"uri": uri, "blob": _b64(data), "mimeType": mime},
    },
    uris,
    st.binary(min_size=1, max_size=600),
    st.sampled_from(IMAGE_TYPES).flatmap(_spelled),
)
_BINARY: Final = st.builds(
    lambda uri, data, mime: {
        "type": "resource",
        "resource": {"uri": uri, "blob": _b64(data), "mimeType": mime},
    },
    uris,
    st.binary(max_size=600),
    st.sampled_from(BINARY_TYPES).flatmap(_spelled),
)

BAD_BASE64: Final = (
    "A",  # length not a multiple of 4
    "AAA",
    "AB==",  # non-canonical: trailing bits set
    "AAF=",
    "A===",
    "=AAA",
    "AA==AA==",
    "AA AA",
    "AAAA\n",
    "!!!!",
    "AA-_",  # URL-safe alphabet
    "\u00e9\u00e9\u00e9\u00e9",
)


def _image_with(data: str = "AAAA", mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": mime}


def _embedded(**resource: Any) -> dict[str, Any]:
    return {"type": "resource", "resource": resource}


_NOT_STRINGS: Final = json_values(3).filter(lambda v: not isinstance(v, str))
_NOT_OBJECTS: Final = json_values(3).filter(lambda v: not isinstance(v, dict))
_KNOWN_TYPES: Final = frozenset({"text", "image", "audio", "resource", "resource_link"})
_OCTETS: Final = "application/octet-stream"

_UNACCEPTABLE: Final = st.one_of(
    st.just({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
    st.text(max_size=12).filter(lambda t: t not in _KNOWN_TYPES).map(lambda t: {"type": t}),
    st.just({"text": "no type"}),
    _NOT_STRINGS.map(lambda v: {"type": v}),
    _NOT_STRINGS.map(lambda v: {"type": "text", "text": v}),
    st.just({"type": "text"}),
    _NOT_OBJECTS,
    st.sampled_from(BAD_BASE64).map(lambda d: _image_with(data=d)),
    st.just(_image_with(data="")),
    st.sampled_from(("image/bmp", "image/svg+xml", "text/html", "", "png")).map(
        lambda m: _image_with(mime=m)
    ),
    st.just({"type": "image", "mimeType": "image/png"}),
    st.sampled_from(BAD_BASE64).map(lambda d: _embedded(uri="u", blob=d, mimeType=_OCTETS)),
    st.sampled_from(("application/pdf", "audio/wav", "", " ")).map(
        lambda m: _embedded(uri="u", blob="AAAA", mimeType=m)
    ),
    st.just(_embedded(uri="u", blob="AAAA")),
    st.just(_embedded(uri="u", text="t", blob="AAAA")),
    st.just(_embedded(uri="u")),
    st.just(_embedded(uri="", text="t")),
    _NOT_OBJECTS.map(lambda v: {"type": "resource", "resource": v}),
    st.just({"type": "resource_link", "uri": "u"}),
    st.just({"type": "resource_link", "name": "n"}),
)

_ACCEPTABLE_BLOCKS: Final = st.one_of(
    _TEXT, _LINK, _TEXT_RESOURCE, _IMAGE, _EMBEDDED_IMAGE, _BINARY
).map(lambda block: Block(block, acceptable=True))

# Seven acceptable blocks to one that is not: about half the prompts run a turn.
blocks: Final = mostly(
    _ACCEPTABLE_BLOCKS, _UNACCEPTABLE.map(lambda block: Block(block, acceptable=False)), odds=7
)


def prompt_is_acceptable(prompt: list[Block]) -> bool:
    """Whether muse-acp must run a turn for a prompt of these blocks."""
    if not prompt or not all(block.acceptable for block in prompt):
        return False
    return any(b.json.get("type") != "text" or b.json["text"].strip() for b in prompt)
