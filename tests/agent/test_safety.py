"""Safety options: offered only where the installed Muse can apply them, turned into ``muse
serve`` flags, guarded against combinations with no safeguard left, and stored and restored."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from muse_acp.agent.hosting.approval_policy import set_back
from muse_acp.agent.options.config_options import (
    SessionSettings,
    apply_config_option,
    config_options as options_of,
    host_flags,
)
from muse_acp.agent.options.preferences import PreferenceStore, SettingsChange, StoredSettings
from muse_acp.agent.options.remembered import restored, to_stored
from muse_acp.agent.options.safety import (
    CONTROLS,
    SafetyChoices,
    apply_safety,
    check_combination,
    check_runnable,
    held_notes,
    offered_controls,
    refusal,
    safety_flags,
    stored,
)
from muse_acp.host.client import MspHost
from muse_acp.host.features import features_of
from muse_acp.rpc.errors import INVALID_PARAMS, RpcError


def failure_of(error: RpcError) -> object:
    """The failure kind an error carries."""
    data = error.data
    failure = data.get("failure") if isinstance(data, dict) else None
    return failure.get("kind") if isinstance(failure, dict) else None


ALL_FLAGS = frozenset(
    {"--disable-write", "--disable-shell", "--disable-sandbox", "--sandbox-network"}
)
EVERYTHING = offered_controls(ALL_FLAGS, features_of("1.2.1", trust_newer=False))


def _offered(**values: str) -> SafetyChoices:
    choices = SafetyChoices(offer=EVERYTHING)
    for key, value in values.items():
        choices = apply_safety(choices, key, value)
    return choices


@pytest.mark.parametrize("version", ["1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.9.0"])
def test_every_version_declaring_the_approval_mode_offers_all_five_controls(version: str) -> None:
    assert offered_controls(ALL_FLAGS, features_of(version, trust_newer=False)) == frozenset(
        CONTROLS
    )


def test_a_control_is_offered_only_when_serve_help_lists_its_flag() -> None:
    offer = offered_controls(
        frozenset({"--disable-shell"}), features_of("1.2.1", trust_newer=False)
    )
    assert offer == {"shell", "approvalPolicy"}
    # A Muse older than every bundle declares no approval mode muse-acp knows of.
    assert "approvalPolicy" not in offered_controls(
        ALL_FLAGS, features_of("1.0.3", trust_newer=True)
    )


def test_the_options_list_only_offered_controls_after_mode_model_and_effort() -> None:
    bare = SessionSettings()
    assert [o.id for o in options_of(bare, None)] == ["mode", "model", "reasoningEffort"]
    offered = SessionSettings(safety=SafetyChoices(offer=frozenset({"shell", "sandboxNetwork"})))
    listed = options_of(offered, None)
    assert [o.id for o in listed][3:] == ["sandboxNetwork", "shell"]
    assert [o.current_value for o in listed][3:] == ["proxy-only", "enabled"]


@pytest.mark.parametrize(
    ("values", "flags"),
    [
        ({"sandbox": "disabled"}, ("--disable-sandbox",)),
        ({"sandboxNetwork": "restricted"}, ("--sandbox-network=restricted",)),
        ({"sandboxNetwork": "enabled"}, ("--sandbox-network=enabled",)),
        ({"sandboxNetwork": "proxy-only"}, ()),
        ({"workspaceWrite": "disabled"}, ("--disable-write",)),
        ({"shell": "disabled"}, ("--disable-shell",)),
        ({"approvalPolicy": "denyUnmatched"}, ()),
    ],
)
def test_each_option_becomes_its_host_flag(values: dict[str, str], flags: tuple[str, ...]) -> None:
    assert safety_flags(_offered(**values)) == flags


def test_mode_and_safety_flags_combine_without_repeats() -> None:
    settings = SessionSettings(
        mode_id="readOnly", safety=_offered(shell="disabled", sandbox="disabled")
    )
    assert host_flags(settings) == ("--disable-write", "--disable-shell", "--disable-sandbox")


def test_a_value_the_control_lacks_is_refused_naming_the_values() -> None:
    with pytest.raises(RpcError) as caught:
        apply_config_option(SessionSettings(safety=_offered()), "sandboxNetwork", "open", None)
    assert caught.value.code == INVALID_PARAMS
    assert "proxy-only, restricted, enabled" in caught.value.message


def test_an_unoffered_control_is_refused_saying_why() -> None:
    with pytest.raises(RpcError) as caught:
        apply_safety(SafetyChoices(offer=frozenset({"shell"})), "approvalPolicy", "allowAll")
    assert caught.value.code == INVALID_PARAMS
    assert "does not offer session/setApprovalMode" in caught.value.message
    assert caught.value.data == {
        "failure": {
            "kind": "safetyControlUnavailable",
            "source": "client",
            "retryable": False,
            "phase": "preparing",
            "execution": "notSubmitted",
        }
    }


@pytest.mark.parametrize(
    ("choices", "auto_approve"),
    [
        (_offered(sandbox="disabled"), True),
        (_offered(sandbox="disabled", approvalPolicy="allowAll"), False),
        (_offered(sandbox="disabled", sandboxNetwork="enabled", approvalPolicy="allowAll"), True),
    ],
)
def test_no_sandbox_with_unattended_approvals_is_refused(
    choices: SafetyChoices, auto_approve: bool
) -> None:
    with pytest.raises(RpcError) as caught:
        check_combination(choices, auto_approve)
    assert caught.value.code == INVALID_PARAMS
    assert "sandbox disabled" in caught.value.message
    assert "nobody would be asked" in caught.value.message


@pytest.mark.parametrize(
    ("choices", "auto_approve"),
    [
        (_offered(sandbox="disabled"), False),
        (_offered(approvalPolicy="allowAll", sandboxNetwork="enabled"), True),
        (_offered(sandbox="disabled", approvalPolicy="denyUnmatched"), False),
    ],
)
def test_combinations_that_keep_a_safeguard_are_allowed(
    choices: SafetyChoices, auto_approve: bool
) -> None:
    check_combination(choices, auto_approve)


def test_a_change_that_leaves_a_refused_combination_as_it_was_is_not_refused_for_it() -> None:
    unsafe = _offered(sandbox="disabled")
    check_combination(unsafe, True, (unsafe, True))  # e.g. only the effort changed
    with pytest.raises(RpcError, match="sandbox disabled and Auto-approve mode"):
        check_combination(unsafe, True, (unsafe, False))
    # Muse's own allowAll counts too, but only before a turn: a client's change cannot cause it.
    assert refusal(unsafe, False, "allowAll") is not None
    assert refusal(_offered(), False, "allowAll") is None
    with pytest.raises(RpcError) as caught:
        check_runnable(unsafe, False, "allowAll")
    assert "another Muse client" in caught.value.message


def test_a_choice_the_host_cannot_apply_is_held_not_dropped() -> None:
    choices = _offered(shell="disabled", sandbox="disabled").offered_to(frozenset({"shell"}))
    assert choices.values == (("sandbox", "disabled"), ("shell", "disabled"))
    assert choices.held() == ["sandbox"]
    assert safety_flags(choices) == ("--disable-shell",), "a held choice is never passed on"
    check_runnable(choices, False, None)  # Muse keeps its sandbox: stricter than the choice
    assert stored(choices) == {"sandbox": "disabled", "shell": "disabled"}


def test_a_held_restriction_refuses_turns_until_the_user_lets_it_go() -> None:
    choices = _offered(shell="disabled").offered_to(frozenset({"sandbox"}))
    with pytest.raises(RpcError) as caught:
        check_runnable(choices, False, None)
    assert failure_of(caught.value) == "safetySettingUnavailable"
    assert "'Shell: Disabled'" in caught.value.message
    assert "--disable-shell" in caught.value.message
    assert "'Shell: Enabled'" in caught.value.message
    [note] = held_notes(choices)
    assert "stays stored" in note
    assert "refused" in note
    [option] = [o for o in options_of(SessionSettings(safety=choices), None) if o.id == "shell"]
    assert option.current_value == "disabled"
    assert [v.value for v in option.options] == ["enabled", "disabled"]  # type: ignore[union-attr]
    with pytest.raises(RpcError):
        apply_safety(choices, "workspaceWrite", "disabled")  # neither offered nor held
    assert apply_safety(choices, "shell", "disabled") == choices
    released = apply_safety(choices, "shell", "enabled")
    assert released.values == ()
    assert released.held() == []
    check_runnable(released, False, None)


@pytest.mark.parametrize(
    ("mode", "policy", "expected"),
    [
        ("autoApprove", None, ("default", None)),
        ("default", "allowAll", ("default", "promptUnmatched")),
    ],
)
def test_stored_settings_the_rule_refuses_come_back_safe_with_a_note(
    mode: str, policy: str | None, expected: tuple[str, str | None]
) -> None:
    safety = (("sandbox", "disabled"),) + ((("approvalPolicy", policy),) if policy else ())
    back, notes = restored(StoredSettings(mode_id=mode, effort="high", safety=safety), None)
    assert back.mode_id == expected[0]
    assert back.safety.value("sandbox") == "disabled", "the sandbox choice is the user's"
    assert dict(back.safety.values).get("approvalPolicy") == expected[1]
    assert back.effort == "high"
    [note] = notes
    assert "sandbox disabled" in note
    assert "nobody would be asked" in note
    assert refusal(back.safety, back.mode_id == "autoApprove") is None


@pytest.mark.anyio
async def test_safety_choices_survive_the_store(tmp_path: Path) -> None:
    settings = SessionSettings(
        mode_id="plan", safety=_offered(shell="disabled", approvalPolicy="promptUnmatched")
    )
    store = PreferenceStore(tmp_path)
    await store.write_settings("s1", SettingsChange(to_stored(settings)))
    kept = store.load("s1").settings
    assert kept is not None
    back, notes = restored(kept, None)
    assert notes == []
    assert back == settings  # the offer is not part of equality; the context adds it
    assert back.safety.chosen("approvalPolicy")


def test_an_unknown_stored_safety_value_falls_back_with_a_note(tmp_path: Path) -> None:
    store = PreferenceStore(tmp_path)
    stored = replace(
        to_stored(SessionSettings()), safety=(("shell", "maybe"), ("workspaceWrite", "disabled"))
    )
    back, notes = restored(stored, None)
    assert back.safety.values == (("workspaceWrite", "disabled"),)
    assert len(notes) == 1
    assert "'shell'='maybe'" in notes[0]
    kept = dict(to_stored(back).safety)
    assert kept == {"shell": "maybe", "workspaceWrite": "disabled"}, "a later write keeps it"
    assert (
        dict(
            to_stored(
                replace(
                    back,
                    safety=apply_safety(back.safety.offered_to(EVERYTHING), "shell", "disabled"),
                )
            ).safety
        )["shell"]
        == "disabled"
    )
    path = store.path_for("s2")
    path.parent.mkdir(parents=True)
    path.write_text('{"schemaVersion": 1, "settings": {"modeId": "default", "safety": [1]}}')
    with pytest.raises(RpcError, match=r"settings\.safety is not an object"):
        store.load("s2")


@pytest.mark.anyio
async def test_a_muse_whose_policy_cannot_be_set_back_refuses_the_turn() -> None:
    # No approval policy offered (an unverified version): nothing is sent, the turn is refused.
    unverified = _offered(sandbox="disabled").offered_to(frozenset({"sandbox"}))
    with pytest.raises(RpcError) as caught:
        await set_back(cast(MspHost, None), "s1", unverified, 1.0)
    assert failure_of(caught.value) == "unsafeSafetyCombination"
    assert "Enable the sandbox" in caught.value.message
