"""A session's settings as the preference store keeps them, and back.

Contract (pure): ``to_stored`` turns the session's mode, model, reasoning effort and safety
choices into the store's ``StoredSettings``; ``restored`` turns them back into
``SessionSettings`` for a session brought back after a restart. What is no longer offered is
never applied silently: an unknown mode or effort falls back to the default, a model the host's
catalog (when known) no longer lists falls back to Muse's default model, an effort the model
does not offer (``fit_effort``) to Muse's default for it, and an unknown safety value to Muse's
default, each with a sentence for the user. Stored settings that the one safety rule refuses
(``safety.refusal``: the sandbox disabled with Auto-approve or the 'Allow everything' policy,
which a hand-edited or older file can hold) come back in Ask mode with Muse's default approval
policy, saying so. Which safety options the installed Muse offers is decided when the session is
registered (``AgentContext.new_session``); a stored choice it cannot apply is held there, never
dropped (``safety``). ``stored_elsewhere`` takes into a live session what another muse-acp
process stored for it."""

from __future__ import annotations

from muse_acp.agent.options.config_options import (
    DEFAULT_VALUE,
    EFFORTS,
    MODES,
    ModelCatalog,
    ModelChoice,
    SessionSettings,
    fit_effort,
)
from muse_acp.agent.options.preferences import SettingsChange, StoredSettings
from muse_acp.agent.options.safety import (
    APPROVAL_POLICY,
    CONTROLS,
    SafetyChoices,
    from_stored,
    refusal,
    stored as stored_safety,
)
from muse_acp.text import clip

__all__ = ["restored", "stored_elsewhere", "to_stored"]

_SHOWN = 80


def to_stored(settings: SessionSettings) -> StoredSettings:
    model = settings.model
    return StoredSettings(
        mode_id=settings.mode_id,
        model_id=model.model_id if model else None,
        provider_id=model.provider_id if model else None,
        effort=settings.effort,
        safety=tuple(stored_safety(settings.safety).items()),
    )


def restored(
    stored: StoredSettings, catalog: ModelCatalog | None
) -> tuple[SessionSettings, list[str]]:
    """The settings to bring the session back with, and what could not be restored."""
    notes: list[str] = []
    mode_id = stored.mode_id
    if mode_id not in MODES:
        notes.append(f"its stored mode {clip(mode_id, _SHOWN)!r} is unknown; it is in Ask mode")
        mode_id = "default"
    effort = stored.effort
    if effort is not None and (effort not in EFFORTS or effort == DEFAULT_VALUE):
        notes.append(
            f"its stored reasoning effort {clip(effort, _SHOWN)!r} is unknown; Muse's default "
            "applies"
        )
        effort = None
    model = ModelChoice(stored.model_id, stored.provider_id) if stored.model_id else None
    if model is not None and catalog is not None and catalog.entry_for(model) is None:
        notes.append(
            f"its stored model {clip(model.model_id, _SHOWN)!r} is no longer offered by Muse; "
            "it runs on Muse's default model"
        )
        model = None
    safety, unknown = from_stored(dict(stored.safety))
    notes += unknown
    who = refusal(safety, MODES[mode_id].automatic == "approve")
    if who is not None:
        made: list[str] = []
        if MODES[mode_id].automatic == "approve":
            mode_id = "default"
            made.append("it is in Ask mode")
        if safety.value(APPROVAL_POLICY) == "allowAll":
            safety = safety.with_value(APPROVAL_POLICY, CONTROLS[APPROVAL_POLICY].default)
            made.append("Muse's approval policy is back to its default")
        notes.append(
            f"its stored settings combine the sandbox disabled with {who}, which muse-acp "
            f"refuses because nobody would be asked before Muse acts; {' and '.join(made)}"
        )
    settings = SessionSettings(mode_id=mode_id, model=model, effort=effort, safety=safety)
    settings, dropped = fit_effort(settings, catalog)
    if dropped is not None:
        notes.append(
            f"its stored reasoning effort {EFFORTS[dropped.effort]} is not offered by "
            f"{dropped.model}; {dropped.applies}"
        )
    return settings, notes


def stored_elsewhere(
    current: SessionSettings,
    wrote: StoredSettings,
    stored: StoredSettings,
    catalog: ModelCatalog | None,
) -> SessionSettings:
    """``current`` with what other processes stored: each setting where ``stored`` (the file
    after this process wrote ``wrote``) differs from ``wrote``, restored as a load would."""
    theirs = SettingsChange.between(wrote, stored)
    if not theirs.members and not theirs.safety:
        return current
    # A value this version cannot use falls back as at a load; the client sees the outcome in
    # the options announced with the change.
    back, _ = restored(stored, catalog)
    values = dict(current.safety.values)
    for option in theirs.safety:
        values.pop(option, None)
        if back.safety.chosen(option):
            values[option] = back.safety.value(option)
    offer = current.safety.offer
    return SessionSettings(
        mode_id=back.mode_id if "mode" in theirs.members else current.mode_id,
        model=back.model if "model" in theirs.members else current.model,
        effort=back.effort if "effort" in theirs.members else current.effort,
        safety=SafetyChoices(tuple(sorted(values.items())), offer).offered_to(offer),
    )
