"""Prompt content conversion: every accepted shape, every rejection, and the exact limits."""

from __future__ import annotations

import base64
from typing import Any, Literal, cast

import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import BaseModel

from muse_acp.agent.translation.prompt_content import (
    BINARY_MIME_TYPES,
    IMAGE_MIME_TYPES,
    MAX_EMBEDDED_BYTES,
    MAX_IMAGE_BYTES,
    convert_prompt,
)
from muse_acp.rpc.errors import INVALID_PARAMS, RpcError
from muse_acp_wire import acp

PNG = "iVBORw0KGgo="
"""The eight-byte PNG signature: enough to stand for an image, whose bytes are never read."""
GIF = "R0lGODlh"
BIN = "AAEC/w=="
LINK_LABEL = "Attached resource link (not fetched):\n"
TEXT_RESOURCE_LABEL = "Attached text resource:\n"
IMAGE_HEADER_LABEL = "Attached image resource (the image itself is the next input part):\n"
BINARY_LABEL = "Attached binary resource (base64 bytes, not decoded):\n"
BINARY_NOTE = (
    "The blob holds the resource's raw bytes in base64; they were not decoded into document text."
)


def text(value: str) -> acp.ContentBlock:
    return acp.TextContentBlock(type="text", text=value)


def image(data: str, mime_type: str = "image/png") -> acp.ContentBlock:
    return acp.ImageContentBlock(type="image", data=data, mime_type=mime_type)


def link(**members: Any) -> acp.ContentBlock:
    return acp.ResourceLinkContentBlock.model_validate({"type": "resource_link", **members})


def resource(contents: dict[str, Any], **members: Any) -> acp.ContentBlock:
    return acp.ResourceContentBlock.model_validate(
        {"type": "resource", "resource": contents, **members}
    )


def unvalidated_resource(contents: dict[str, Any]) -> acp.ContentBlock:
    return acp.ResourceContentBlock.model_construct(type="resource", resource=cast(Any, contents))


def audio() -> acp.ContentBlock:
    return acp.AudioContentBlock(type="audio", data="UklGRg==", mime_type="audio/wav")


class VideoBlock(BaseModel):
    """A block type ACP does not define, as a caller that skipped validation might pass."""

    type: Literal["video"] = "video"


def dumped(blocks: list[acp.ContentBlock]) -> list[dict[str, Any]]:
    return [
        part.model_dump(mode="json", by_alias=True, exclude_unset=True)
        for part in convert_prompt(blocks)
    ]


def rejection(blocks: list[acp.ContentBlock]) -> RpcError:
    with pytest.raises(RpcError) as caught:
        convert_prompt(blocks)
    assert caught.value.code == INVALID_PARAMS == -32602
    return caught.value


def text_part(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def image_part(data: str, media_type: str) -> dict[str, Any]:
    return {"type": "image", "base64Data": data, "mediaType": media_type}


def encoded(size: int) -> str:
    return base64.b64encode(bytes(size)).decode("ascii")


def utf8_size(part: dict[str, Any]) -> int:
    return len(str(part["text"]).encode("utf-8"))


URI_ONLY: dict[str, Any] = {"uri": "file:///a"}
"""Members of a text resource built without validation and without its required text."""

ACCEPTED: list[tuple[str, list[acp.ContentBlock], list[dict[str, Any]]]] = [
    ("text", [text("hello")], [text_part("hello")]),
    (
        "text passes verbatim",
        [text("  line one\n\tline two ✓ \r\n")],
        [text_part("  line one\n\tline two ✓ \r\n")],
    ),
    ("empty text beside other text", [text(""), text("x")], [text_part(""), text_part("x")]),
    (
        "resource link with only its required members",
        [link(uri="file:///src/app.py", name="app.py")],
        [text_part(LINK_LABEL + '{"uri":"file:///src/app.py","name":"app.py"}')],
    ),
    (
        "resource link with every member, non-ASCII kept",
        [
            link(
                uri="https://example.com/cv",
                name="résumé.pdf",
                title="Résumé",
                description="My CV",
                mimeType="application/pdf",
                size=2048,
                annotations={"audience": ["user"], "priority": 0.5},
                _meta={"origin": "editor"},
            )
        ],
        [
            text_part(
                LINK_LABEL + '{"uri":"https://example.com/cv","name":"résumé.pdf",'
                '"title":"Résumé","description":"My CV","mimeType":"application/pdf",'
                '"size":2048,"annotations":{"audience":["user"],"priority":0.5},'
                '"_meta":{"origin":"editor"}}'
            )
        ],
    ),
    (
        "resource link member sent as null stays present",
        [link(uri="file:///a", name="a", title=None)],
        [text_part(LINK_LABEL + '{"uri":"file:///a","name":"a","title":null}')],
    ),
    (
        "embedded text resource with only its required members",
        [resource({"uri": "file:///notes.md", "text": "# Notes\n- é"})],
        [
            text_part(
                TEXT_RESOURCE_LABEL
                + '{"resource":{"uri":"file:///notes.md","text":"# Notes\\n- é"}}'
            )
        ],
    ),
    (
        "embedded text resource with every member",
        [
            resource(
                {
                    "text": "x = 1",
                    "uri": "file:///a.py",
                    "mimeType": "text/x-python",
                    "_meta": {"r": 1},
                },
                annotations={"priority": 1},
                _meta={"b": True},
            )
        ],
        [
            text_part(
                TEXT_RESOURCE_LABEL
                + '{"resource":{"uri":"file:///a.py","mimeType":"text/x-python",'
                '"text":"x = 1","_meta":{"r":1}},"annotations":{"priority":1.0},"_meta":{"b":true}}'
            )
        ],
    ),
    ("image block alone", [image(PNG)], [image_part(PNG, "image/png")]),
    (
        "image MIME type is trimmed and lower-cased",
        [image(PNG, " IMAGE/JPEG "), image(GIF, "image/GIF"), image(PNG, "image/webp")],
        [
            image_part(PNG, "image/jpeg"),
            image_part(GIF, "image/gif"),
            image_part(PNG, "image/webp"),
        ],
    ),
    (
        "embedded image becomes a header and then the image",
        [resource({"uri": "file:///logo.png", "blob": PNG, "mimeType": "Image/PNG "})],
        [
            text_part(
                IMAGE_HEADER_LABEL
                + '{"resource":{"uri":"file:///logo.png","mimeType":"image/png"}}'
            ),
            image_part(PNG, "image/png"),
        ],
    ),
    (
        "embedded image header carries annotations and both metas",
        [
            resource(
                {"uri": "file:///a.gif", "blob": GIF, "mimeType": "image/gif", "_meta": {"r": 2}},
                annotations={"audience": ["assistant"]},
                _meta={"b": "x"},
            )
        ],
        [
            text_part(
                IMAGE_HEADER_LABEL + '{"resource":{"uri":"file:///a.gif","mimeType":"image/gif",'
                '"_meta":{"r":2}},"annotations":{"audience":["assistant"]},"_meta":{"b":"x"}}'
            ),
            image_part(GIF, "image/gif"),
        ],
    ),
    (
        "octet-stream blob is carried as base64 text",
        [resource({"uri": "file:///a.bin", "blob": BIN, "mimeType": "application/octet-stream"})],
        [
            text_part(
                BINARY_LABEL + '{"resource":{"uri":"file:///a.bin","mimeType":'
                '"application/octet-stream","encoding":"base64","blob":"AAEC/w=="},'
                f'"note":"{BINARY_NOTE}"' + "}"
            )
        ],
    ),
    (
        "text/plain blob with every member is carried as base64 text",
        [
            resource(
                {
                    "uri": "file:///a.txt",
                    "blob": "aGVsbG8K",
                    "mimeType": " Text/Plain",
                    "_meta": {"r": 3},
                },
                annotations={"lastModified": "2025-01-02T03:04:05Z"},
                _meta={"b": 4},
            )
        ],
        [
            text_part(
                BINARY_LABEL + '{"resource":{"uri":"file:///a.txt","mimeType":"text/plain",'
                '"encoding":"base64","blob":"aGVsbG8K","_meta":{"r":3}},'
                f'"note":"{BINARY_NOTE}",'
                '"annotations":{"lastModified":"2025-01-02T03:04:05Z"},"_meta":{"b":4}}'
            )
        ],
    ),
    (
        "empty octet-stream blob is accepted",
        [resource({"uri": "file:///empty", "blob": "", "mimeType": "application/octet-stream"})],
        [
            text_part(
                BINARY_LABEL + '{"resource":{"uri":"file:///empty","mimeType":'
                '"application/octet-stream","encoding":"base64","blob":""},'
                f'"note":"{BINARY_NOTE}"' + "}"
            )
        ],
    ),
    (
        "mixed blocks keep their order",
        [
            text("look at"),
            link(uri="file:///b", name="b"),
            image(PNG),
            resource({"uri": "file:///c", "text": "c"}),
            resource({"uri": "file:///d.gif", "blob": GIF, "mimeType": "image/gif"}),
            resource({"uri": "file:///e", "blob": BIN, "mimeType": "text/plain"}),
            text("thanks"),
        ],
        [
            text_part("look at"),
            text_part(LINK_LABEL + '{"uri":"file:///b","name":"b"}'),
            image_part(PNG, "image/png"),
            text_part(TEXT_RESOURCE_LABEL + '{"resource":{"uri":"file:///c","text":"c"}}'),
            text_part(
                IMAGE_HEADER_LABEL + '{"resource":{"uri":"file:///d.gif","mimeType":"image/gif"}}'
            ),
            image_part(GIF, "image/gif"),
            text_part(
                BINARY_LABEL + '{"resource":{"uri":"file:///e","mimeType":"text/plain",'
                '"encoding":"base64","blob":"AAEC/w=="},'
                f'"note":"{BINARY_NOTE}"' + "}"
            ),
            text_part("thanks"),
        ],
    ),
]


@pytest.mark.parametrize(
    ("blocks", "parts"), [case[1:] for case in ACCEPTED], ids=[case[0] for case in ACCEPTED]
)
def test_accepted_prompts_become_these_exact_parts(
    blocks: list[acp.ContentBlock], parts: list[dict[str, Any]]
) -> None:
    assert dumped(blocks) == parts


def test_prompt_validated_from_the_wire_converts_in_order() -> None:
    request = acp.PromptRequest.model_validate(
        {
            "sessionId": "s",
            "prompt": [
                {"type": "text", "text": "see"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "a"}},
            ],
        }
    )
    assert [part["type"] for part in dumped(request.prompt)] == ["text", "image", "text"]


REJECTED: list[tuple[str, list[acp.ContentBlock], str, tuple[str, ...]]] = [
    ("empty prompt", [], "the prompt has no content blocks", ("resource_link", "image")),
    (
        "only blank text",
        [text(""), text(" \n\t")],
        "the prompt holds only blank text",
        ("non-blank text", "resource_link", "image"),
    ),
    (
        "image of another MIME type",
        [text("see"), image(PNG, "image/bmp")],
        "prompt block 2 (image): ",
        ("'image/bmp'", "image/gif, image/jpeg, image/png, image/webp"),
    ),
    (
        "image without bytes",
        [image("")],
        "prompt block 1 (image): ",
        ("data is empty",),
    ),
    (
        "audio",
        [text("listen"), audio()],
        "prompt block 2 (audio): ",
        ("audio is not supported by Muse", "no turn was started", "resource_link"),
    ),
    (
        "unknown block type",
        [cast(acp.ContentBlock, VideoBlock())],
        "prompt block 1 (video): ",
        ("not supported", "text, resource_link, resource or image"),
    ),
    (
        "text resource without a uri",
        [resource({"uri": "", "text": "x"})],
        "prompt block 1 (resource): ",
        ("non-empty uri",),
    ),
    (
        "blob without a MIME type",
        [resource({"uri": "file:///a", "blob": BIN})],
        "prompt block 1 (resource): ",
        ("non-empty uri and mimeType", "application/octet-stream"),
    ),
    (
        "blob with a blank MIME type",
        [resource({"uri": "file:///a", "blob": BIN, "mimeType": "  "})],
        "prompt block 1 (resource): ",
        ("non-empty uri and mimeType",),
    ),
    (
        "blob without a uri",
        [resource({"uri": "", "blob": BIN, "mimeType": "application/octet-stream"})],
        "prompt block 1 (resource): ",
        ("non-empty uri and mimeType",),
    ),
    (
        "document blob",
        [
            text("read"),
            resource({"uri": "file:///a.pdf", "blob": BIN, "mimeType": "application/pdf"}),
        ],
        "prompt block 2 (resource): ",
        ("'application/pdf'", "not decoded", "image/png", "application/octet-stream, text/plain"),
    ),
    (
        "audio blob",
        [resource({"uri": "file:///a.wav", "blob": BIN, "mimeType": "audio/wav"})],
        "prompt block 1 (resource): ",
        ("'audio/wav'", "accepted blob types"),
    ),
    (
        "resource with both text and blob",
        [unvalidated_resource({"uri": "file:///a", "text": "x", "blob": BIN})],
        "prompt block 1 (resource): ",
        ("exactly one of text or blob", "carries both"),
    ),
    (
        "resource with neither text nor blob",
        [unvalidated_resource({"uri": "file:///a"})],
        "prompt block 1 (resource): ",
        ("exactly one of text or blob", "carries neither"),
    ),
    (
        "resource model missing its text",
        [
            acp.ResourceContentBlock.model_construct(
                type="resource", resource=acp.TextResourceContents.model_construct(**URI_ONLY)
            )
        ],
        "prompt block 1 (resource): ",
        ("carries neither",),
    ),
    (
        "resource with members of the wrong type",
        [unvalidated_resource({"uri": 7, "text": "x"})],
        "prompt block 1 (resource): ",
        ("malformed", "string uri"),
    ),
]


@pytest.mark.parametrize(
    ("blocks", "prefix", "fragments"),
    [case[1:] for case in REJECTED],
    ids=[case[0] for case in REJECTED],
)
def test_rejected_prompts_name_the_block_and_the_rule(
    blocks: list[acp.ContentBlock], prefix: str, fragments: tuple[str, ...]
) -> None:
    message = rejection(blocks).message
    assert message.startswith(prefix)
    for fragment in fragments:
        assert fragment in message


BAD_BASE64: list[tuple[str, str]] = [
    ("YR==", "not canonical"),
    ("YWJ=", "not canonical"),
    ("YQ==\n", "outside the standard alphabet"),
    ("YW\r\nJj", "outside the standard alphabet"),
    ("YQ ==", "outside the standard alphabet"),
    (" YQ==", "outside the standard alphabet"),
    ("YQ-_", "outside the standard alphabet"),
    ("YQ!=", "outside the standard alphabet"),
    ("YWé=", "outside the standard alphabet"),
    ("YQ=", "not a multiple of 4"),
    ("YQ", "not a multiple of 4"),
    ("YWJjZ", "not a multiple of 4"),
    ("Y===", "padding is misplaced"),
    ("=YQ=", "padding is misplaced"),
    ("YQ==YQ==", "padding is misplaced"),
]
BASE64_CARRIERS: list[tuple[str, str, Any]] = [
    ("image block", "(image): data", lambda data: image(data)),
    (
        "embedded image",
        "(resource): blob",
        lambda data: resource({"uri": "file:///a.png", "blob": data, "mimeType": "image/png"}),
    ),
    (
        "binary blob",
        "(resource): blob",
        lambda data: resource({"uri": "file:///a", "blob": data, "mimeType": "text/plain"}),
    ),
]


@pytest.mark.parametrize(("data", "reason"), BAD_BASE64)
@pytest.mark.parametrize(
    ("member", "make"),
    [carrier[1:] for carrier in BASE64_CARRIERS],
    ids=[carrier[0] for carrier in BASE64_CARRIERS],
)
def test_base64_that_is_not_strict_and_canonical_is_rejected(
    data: str, reason: str, member: str, make: Any
) -> None:
    message = rejection([text("see"), make(data)]).message
    assert message.startswith(f"prompt block 2 {member} is not strict base64: ")
    assert reason in message
    assert "no whitespace" in message


def test_six_mebibytes_of_decoded_image_bytes_pass_and_one_byte_more_fails() -> None:
    assert MAX_IMAGE_BYTES == 6 * 1024 * 1024
    exact = encoded(MAX_IMAGE_BYTES)
    assert dumped([image(exact)]) == [image_part(exact, "image/png")]
    message = rejection([image(encoded(MAX_IMAGE_BYTES + 1))]).message
    assert message.startswith("prompt block 1 (image): ")
    assert "6 MiB" in message


def test_image_limit_is_the_total_over_all_images_of_the_prompt() -> None:
    half = encoded(MAX_IMAGE_BYTES // 2)
    assert len(convert_prompt([image(half), image(half)])) == 2
    message = rejection([image(half), image(encoded(MAX_IMAGE_BYTES // 2 + 1))]).message
    assert message.startswith("prompt block 2 (image): ")
    embedded = resource({"uri": "file:///a.png", "blob": encoded(2), "mimeType": "image/png"})
    message = rejection([image(encoded(MAX_IMAGE_BYTES - 1)), embedded]).message
    assert message.startswith("prompt block 2 (resource): ")
    assert "6 MiB" in message


def test_oversized_image_data_is_refused_by_its_length_before_it_is_decoded() -> None:
    # Invalid characters too: the size verdict wins because decoding is never reached.
    message = rejection([image("!" * (MAX_IMAGE_BYTES // 3 * 4 + 8))]).message
    assert "6 MiB" in message
    assert "base64" not in message


def text_resource_overhead(uri: str = "file:///notes.txt") -> int:
    """The UTF-8 size of a text resource part whose text is empty."""
    return utf8_size(dumped([resource({"uri": uri, "text": ""})])[0])


def filler(size: int, uri: str = "file:///notes.txt") -> acp.ContentBlock:
    """A text resource whose part is exactly ``size`` UTF-8 bytes."""
    return resource({"uri": uri, "text": "x" * (size - text_resource_overhead(uri))})


def test_embedded_budget_passes_at_exactly_64_kib_and_fails_one_byte_over() -> None:
    assert MAX_EMBEDDED_BYTES == 65536
    [part] = dumped([filler(MAX_EMBEDDED_BYTES)])
    assert utf8_size(part) == 65536
    message = rejection([filler(MAX_EMBEDDED_BYTES + 1)]).message
    assert message.startswith("prompt block 1 (resource): ")
    assert "64 KiB" in message


def test_embedded_budget_counts_utf8_bytes_not_characters() -> None:
    room = MAX_EMBEDDED_BYTES - text_resource_overhead()
    wide = "é" * (room // 2 - 2) + "😀"
    fits = wide + "x" * (room - len(wide.encode("utf-8")))
    [part] = dumped([resource({"uri": "file:///notes.txt", "text": fits})])
    assert utf8_size(part) == 65536
    over = fits + "x"
    assert len(TEXT_RESOURCE_LABEL) + len(over) < 40_000
    message = rejection([resource({"uri": "file:///notes.txt", "text": over})]).message
    assert "64 KiB" in message


def test_embedded_budget_spans_text_resources_image_headers_and_binary_blobs() -> None:
    embedded_image = resource({"uri": "file:///a.png", "blob": PNG, "mimeType": "image/png"})
    binary = resource({"uri": "file:///a.bin", "blob": BIN, "mimeType": "application/octet-stream"})
    used = sum(
        utf8_size(part) for part in dumped([embedded_image, binary]) if part["type"] == "text"
    )
    assert len(convert_prompt([embedded_image, binary, filler(MAX_EMBEDDED_BYTES - used)])) == 4
    message = rejection([embedded_image, binary, filler(MAX_EMBEDDED_BYTES - used + 1)]).message
    assert message.startswith("prompt block 3 (resource): ")
    message = rejection([filler(MAX_EMBEDDED_BYTES - 10), binary]).message
    assert message.startswith("prompt block 2 (resource): ")
    message = rejection([filler(MAX_EMBEDDED_BYTES - 10), embedded_image]).message
    assert message.startswith("prompt block 2 (resource): ")


def test_links_and_plain_text_do_not_count_toward_the_embedded_budget() -> None:
    blocks = [
        text("y" * (MAX_EMBEDDED_BYTES * 2)),
        link(uri="file:///big", name="big", description="z" * MAX_EMBEDDED_BYTES),
        filler(MAX_EMBEDDED_BYTES),
    ]
    assert len(convert_prompt(blocks)) == 3


def test_oversized_binary_blob_is_refused_by_its_length_before_it_is_decoded() -> None:
    blob = "!" * (MAX_EMBEDDED_BYTES + 1)
    block = resource({"uri": "file:///a", "blob": blob, "mimeType": "application/octet-stream"})
    message = rejection([block]).message
    assert "64 KiB" in message
    assert "base64" not in message


def test_limits_and_mime_tables_have_their_documented_values() -> None:
    assert frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"}) == IMAGE_MIME_TYPES
    assert frozenset({"application/octet-stream", "text/plain"}) == BINARY_MIME_TYPES


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


_URIS = st.text(min_size=1, max_size=30)
_TEXT_BLOCKS = st.builds(text, st.text(max_size=40))
_LINKS = st.builds(lambda uri, name: link(uri=uri, name=name), _URIS, st.text(max_size=20))
_TEXT_RESOURCES = st.builds(
    lambda uri, body: resource({"uri": uri, "text": body}), _URIS, st.text(max_size=200)
)
_IMAGES = st.builds(
    lambda data, mime: image(_b64(data), mime),
    st.binary(min_size=1, max_size=64),
    st.sampled_from(sorted(IMAGE_MIME_TYPES)),
)
_EMBEDDED_IMAGES = st.builds(
    lambda uri, data, mime: resource({"uri": uri, "blob": _b64(data), "mimeType": mime}),
    _URIS,
    st.binary(min_size=1, max_size=64),
    st.sampled_from(sorted(IMAGE_MIME_TYPES)),
)
_BINARIES = st.builds(
    lambda uri, data, mime: resource({"uri": uri, "blob": _b64(data), "mimeType": mime}),
    _URIS,
    st.binary(max_size=64),
    st.sampled_from(sorted(BINARY_MIME_TYPES)),
)
_BLOCKS = st.one_of(_TEXT_BLOCKS, _LINKS, _TEXT_RESOURCES, _IMAGES, _EMBEDDED_IMAGES, _BINARIES)


def expected_part_types(block: acp.ContentBlock) -> list[str]:
    if isinstance(block, acp.ImageContentBlock):
        return ["image"]
    if isinstance(block, acp.ResourceContentBlock) and isinstance(
        block.resource, acp.BlobResourceContents
    ):
        return ["text", "image"] if block.resource.mime_type in IMAGE_MIME_TYPES else ["text"]
    return ["text"]


@settings(max_examples=150, deadline=None)
@given(st.lists(_BLOCKS, min_size=1, max_size=8))
def test_valid_blocks_map_one_to_one_onto_parts_in_order(blocks: list[acp.ContentBlock]) -> None:
    assume(not all(isinstance(b, acp.TextContentBlock) and not b.text.strip() for b in blocks))
    parts = dumped(blocks)
    assert [kind for block in blocks for kind in expected_part_types(block)] == [
        part["type"] for part in parts
    ]
    remaining = iter(parts)
    for block in blocks:
        first = next(remaining)
        if isinstance(block, acp.TextContentBlock):
            assert first == text_part(block.text)
        elif isinstance(block, acp.ImageContentBlock):
            assert first == image_part(block.data, block.mime_type)
        elif isinstance(block, acp.ResourceLinkContentBlock):
            assert first["text"].startswith(LINK_LABEL)
        elif not isinstance(block, acp.ResourceContentBlock):
            pytest.fail(f"the strategy made an unexpected block: {block!r}")
        elif isinstance(block.resource, acp.TextResourceContents):
            assert first["text"].startswith(TEXT_RESOURCE_LABEL)
        elif block.resource.mime_type in IMAGE_MIME_TYPES:
            assert first["text"].startswith(IMAGE_HEADER_LABEL)
            assert next(remaining) == image_part(block.resource.blob, block.resource.mime_type)
        else:
            assert first["text"].startswith(BINARY_LABEL)
            assert f'"blob":"{block.resource.blob}"' in first["text"]
    assert next(remaining, None) is None
