"""muse-acp's vocabulary reads every bundle a host can be read with (``codegen.fit``).

The runtime parses every host's frames with the vocabulary, so a member it requires that a
bundle leaves optional, a null it refuses that a bundle allows, or a value a closed enum of it
lacks would refuse a frame that host may send. The check holds for every bundle under
``spec/msp/``, and reports each kind of difference when one is planted.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Final

import pytest

from codegen.config import SPEC_DIR
from codegen.fit import incoming, misfits
from muse_acp_wire import msp

VOCABULARY: Final[dict[str, Any]] = json.loads(
    (SPEC_DIR / "msp-vocabulary" / "msp.schema.json").read_text(encoding="utf-8")
)
GOLDEN: Final = SPEC_DIR.parent / "tests" / "golden" / "msp" / "valid"
BUNDLES: Final = sorted(path.parent for path in (SPEC_DIR / "msp").glob("*/msp.schema.json"))


def _bundle(folder: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((folder / "msp.schema.json").read_text("utf-8"))
    return document


@pytest.mark.parametrize("folder", BUNDLES, ids=lambda folder: folder.name)
def test_the_vocabulary_reads_everything_a_host_of_the_bundle_may_send(folder: Path) -> None:
    assert misfits(VOCABULARY, _bundle(folder)) == []


def test_what_muse_1_4_2_leaves_out_or_sends_as_null_parses_with_the_vocabulary() -> None:
    # Each was refused while the vocabulary required it (hand-written from recorded frames).
    envelope = {"sessionId": "s", "viewCursor": "v:s:1"}
    source = {"stream": {"kind": "session", "id": "s"}, "first": {"id": "r", "sequence": 1}}
    source_range = {**source, "last": source["first"]}
    answer = json.loads((GOLDEN / "initialize_result.json").read_text(encoding="utf-8"))
    del answer["sessionDurability"]
    assert msp.InitializeResult.model_validate(answer).session_durability is None
    assert (
        msp.ItemDeltaParams.model_validate({**envelope, "itemId": "i", "delta": "x"}).field is None
    )
    changed = {**envelope, "sourceRange": source_range}
    assert msp.SessionGoalChangedParams.model_validate(changed).goal is None
    branch = msp.SessionBranchChangedParams.model_validate({**changed, "workspaceRoot": "/w"})
    assert branch.branch is None


def _planted(change: str) -> dict[str, Any]:
    bundle = copy.deepcopy(_bundle(SPEC_DIR / "msp" / "1.4.4"))
    defs = bundle["$defs"]
    if change == "optional":
        defs["TurnCompletedParams"]["required"].remove("turnId")
    elif change == "null":
        member = defs["TurnCompletedParams"]["properties"]["turnId"]
        defs["TurnCompletedParams"]["properties"]["turnId"] = {"anyOf": [member, {"type": "null"}]}
    elif change == "enum":
        defs["PlatformOs"]["enum"].append("plan9")
    elif change == "paired":
        # session/read's result is SessionHistoryResult here and SessionReadResult in Muse's
        # own names: the pair comes from the method table.
        defs["SessionReadResult"]["required"].remove("history")
    return bundle


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        ("optional", "TurnCompletedParams.turnId: required here, optional in the bundle"),
        ("null", "TurnCompletedParams.turnId: the bundle allows null, the vocabulary does not"),
        ("enum", "PlatformOs: closed enum lacks ['plan9']"),
        (
            "paired",
            "SessionHistoryResult (Muse's SessionReadResult, session/read result).history: "
            "required here, optional in the bundle",
        ),
    ],
)
def test_a_planted_difference_is_reported(change: str, reported: str) -> None:
    assert misfits(VOCABULARY, _planted(change)) == [reported]


def test_only_what_a_host_sends_is_held_to_it() -> None:
    # muse-acp builds the params of host methods itself: requiring more than Muse does there
    # refuses nothing a host sends.
    arriving = incoming(VOCABULARY)
    assert {"TurnCompletedParams", "InitializeResult", "ErrorData", "SessionHistoryResult"} <= (
        arriving
    )
    assert "UserInputCancelParams" not in arriving
    bundle = copy.deepcopy(_bundle(SPEC_DIR / "msp" / "1.4.4"))
    bundle["$defs"]["UserInputCancelParams"].pop("required", None)
    assert misfits(VOCABULARY, bundle) == []
