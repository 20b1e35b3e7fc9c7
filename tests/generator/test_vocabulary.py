"""The vocabulary is muse-acp's own bundle (spec/msp-vocabulary), plus the newer types its
additions name: each root and what it refers to, the vocabulary's own models where it has them
(its names win), and a generation error naming any root or borrowed model it cannot take."""

from __future__ import annotations

import ast
import textwrap

import pytest

import muse_acp_wire.msp as msp
import muse_acp_wire.msp_additions as msp_additions
import muse_acp_wire.msp_vocabulary as vocabulary_bundle
from codegen.prepass import SchemaError
from codegen.vocabulary import additions
from muse_acp_wire.msp_bundles import BUNDLES, VOCABULARY_MODULE

OLD = textwrap.dedent(
    '''\
    """The vocabulary."""

    from muse_acp_wire._base import WireModel


    class Position(WireModel):
        at: int


    class Range(WireModel):
        first: Position
        note: str | None = None


    class Known(WireModel):
        range: Range
    '''
)

NEW = textwrap.dedent(
    '''\
    """The newest bundle."""

    from typing import TypeAlias

    from muse_acp_wire._base import WireModel


    class Record(WireModel):
        sequence: int


    class Range(WireModel):
        first: Record
        note: str | None = None
        extra: str | None = None


    class Known(WireModel):
        range: Range


    class Reason(WireModel):
        text: str


    class Retry(WireModel):
        range: Range
        reason: "Reason | None" = None


    Why: TypeAlias = Reason | None


    class Unrelated(WireModel):
        n: int
    '''
)


def _defined(source: str) -> list[str]:
    return [node.name for node in ast.parse(source).body if isinstance(node, ast.ClassDef)]


def test_a_root_brings_what_it_refers_to_and_borrows_the_vocabulary_s_own_models() -> None:
    source = additions(NEW, "9.9.9", OLD, "msp_old", ("Retry",))
    # Range is the vocabulary's (it reads the newer Range: every member it requires is
    # required there), so Record, which only the newer Range needs, is not added.
    assert _defined(source) == ["Reason", "Retry"]
    assert "from muse_acp_wire.msp_old import (\n    Range,\n)" in source
    assert "9.9.9" in source.splitlines()[0]
    assert "Why" not in source  # a type nothing of the closure mentions stays out


def test_a_root_the_vocabulary_already_has_is_an_error_naming_it() -> None:
    with pytest.raises(SchemaError, match=r"Known already in the vocabulary \(msp_old\)"):
        additions(NEW, "9.9.9", OLD, "msp_old", ("Retry", "Known"))


def test_a_root_the_newest_bundle_lacks_is_an_error_naming_it() -> None:
    with pytest.raises(SchemaError, match=r"Imagined not defined by the newest bundle 9\.9\.9"):
        additions(NEW, "9.9.9", OLD, "msp_old", ("Imagined",))


def test_a_borrowed_model_that_could_not_read_the_newer_frames_is_an_error_naming_it() -> None:
    # The vocabulary requires Range.note, which the newer bundle makes optional.
    strict = OLD.replace("note: str | None = None", "note: str")
    with pytest.raises(SchemaError, match=r"Range is needed by an addition.*\(note\)"):
        additions(NEW, "9.9.9", strict, "msp_old", ("Retry",))


def test_the_vocabulary_is_muse_acp_s_own_bundle_with_the_newer_types_added() -> None:
    newest = list(BUNDLES)[-1]
    assert VOCABULARY_MODULE == vocabulary_bundle.__name__ not in BUNDLES.values()
    # It is no host's bundle: it names no host version or fingerprint of its own.
    assert not hasattr(msp, "HOST_VERSION")
    # The configured bundle's names win: its own models, not the newest bundle's.
    assert msp.SourceRange is vocabulary_bundle.SourceRange
    assert msp.ApprovalSubject is vocabulary_bundle.ApprovalSubject
    for name in (
        "TurnModelRetryScheduledParams",
        "ApprovalRequestParams",
        "UserInputEngagedParams",
        "UserInputInterruptParams",
        "SessionLeaveCompletedParams",
    ):
        assert getattr(msp, name) is getattr(msp_additions, name)
        assert name in msp.__all__
    assert newest in (msp_additions.__doc__ or "")


def test_a_newer_notification_is_read_with_the_added_types() -> None:
    retry = msp.TurnModelRetryScheduledParams.model_validate(
        {
            "sessionId": "s",
            "turnId": "t",
            "viewCursor": "v:s:3",
            "attempt": 1,
            "maxAttempts": 3,
            "nextAttempt": 2,
            "retryDelayMs": 1500,
            "errorKind": "overloaded",
            "sourceRange": {
                "stream": {"kind": "session", "id": "s"},
                "first": {"id": "r1", "sequence": 4},
                "last": {"id": "r1", "sequence": 4},
            },
        }
    )
    assert (retry.retry_delay_ms, retry.next_attempt, retry.error_kind) == (1500, 2, "overloaded")
    assert isinstance(retry.source_range, vocabulary_bundle.SourceRange)
