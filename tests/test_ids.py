"""Minted ids are canonical UUIDv7s, ordered as they were minted."""

from __future__ import annotations

import uuid

from hypothesis import given, strategies as st

from muse_acp.ids import canonical, is_uuid7, new_uuid7


@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_the_canonical_text_is_the_standard_librarys(value: int) -> None:
    assert canonical(value) == str(uuid.UUID(int=value))


def test_ids_minted_in_a_burst_are_uuid7s_in_minting_order() -> None:
    minted = [new_uuid7() for _ in range(5000)]  # more than one millisecond's counter holds
    assert all(is_uuid7(text) for text in minted)
    assert all(uuid.UUID(text).version == 7 for text in minted[:50])
    assert minted == sorted(minted)
    assert len(set(minted)) == len(minted)
