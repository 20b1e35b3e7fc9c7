"""Token and subscription usage as Muse reports it: ACP ``usage_update`` and ``/status`` lines.

Contract (pure): ``TokenUse.from_params`` reads ``session/tokenUsage`` (sent after every model
step): the session's running totals (``cumulative``, else this step's counts added to what was
known) and the tokens the step had in its context (prompt plus output). ``PlanUse.from_usage``
reads the subscription usage of ``usage/changed`` and ``usage/read`` (Muse 1.3.0 and newer; the
host's account, not one session). ``usage_update`` builds the ACP ``usage_update`` for what is
known: ``used``/``size`` are the context window's (the step's tokens against the window size
Muse last reported), and ``_meta["muse/usage"]`` carries the token totals and subscription
shares (``MuseUsageUpdateMeta``); ``with_usage`` adds the same ``_meta`` to any other
``usage_update`` (the context window's, see ``progress``). ACP requires ``size``, so nothing
is sent before Muse reported its context window once; the figures are still kept for
``/status`` (``usage_lines``).
"""

from __future__ import annotations

from dataclasses import dataclass

from muse_acp.agent.translation.status import ContextUse
from muse_acp_wire import acp, msp

__all__ = ["PlanUse", "TokenUse", "usage_lines", "usage_update", "with_usage"]


@dataclass(frozen=True, slots=True)
class TokenUse:
    """The session's token totals, and the tokens the latest model step had in context."""

    prompt: int
    output: int
    total: int
    step: int

    @classmethod
    def from_params(cls, params: msp.SessionTokenUsageParams, before: TokenUse | None) -> TokenUse:
        counts = params.usage
        step = params.total_tokens or (counts.input_tokens + counts.output_tokens)
        if params.cumulative is not None:
            c = params.cumulative
            return cls(c.prompt_tokens, c.output_tokens, c.total_tokens, step)
        prompt = (before.prompt if before else 0) + counts.input_tokens
        output = (before.output if before else 0) + counts.output_tokens
        return cls(prompt, output, prompt + output, step)


@dataclass(frozen=True, slots=True)
class PlanUse:
    """The shares of the account's usage budgets spent, as Muse last observed them."""

    window_percent: int
    weekly_percent: int
    window_minutes: int | None = None

    @classmethod
    def from_usage(cls, usage: msp.SubscriptionUsage) -> PlanUse:
        return cls(
            usage.window.used_percent, usage.weekly.used_percent, usage.window.window_duration_mins
        )


def usage_update(
    context: ContextUse | None, tokens: TokenUse | None, plan: PlanUse | None
) -> acp.UsageUpdateSessionUpdate | None:
    """The ``usage_update`` for what is known, or None before the window size is known."""
    if context is None:
        return None
    update = acp.UsageUpdateSessionUpdate(
        session_update="usage_update",
        used=tokens.step if tokens is not None else context.used,
        size=context.size,
    )
    return with_usage(update, tokens, plan)


def with_usage(
    update: acp.UsageUpdateSessionUpdate, tokens: TokenUse | None, plan: PlanUse | None
) -> acp.UsageUpdateSessionUpdate:
    """``update`` carrying the latest token and subscription figures in ``_meta["muse/usage"]``
    (unchanged when it has its own ``_meta`` or nothing is known)."""
    if update.field_meta is not None or (tokens is None and plan is None):
        return update
    report = acp.MuseUsageReport()
    if tokens is not None:
        report.tokens = acp.MuseTokenTotals(
            prompt_tokens=tokens.prompt, output_tokens=tokens.output, total_tokens=tokens.total
        )
    if plan is not None:
        report.subscription = acp.MuseSubscriptionUsage(
            window_used_percent=plan.window_percent, weekly_used_percent=plan.weekly_percent
        )
    meta = acp.MuseUsageUpdateMeta(muse_usage=report)
    dumped = meta.model_dump(mode="json", by_alias=True, exclude_none=True)
    return update.model_copy(update={"field_meta": dumped})


def usage_lines(tokens: TokenUse | None, plan: PlanUse | None) -> list[str]:
    """``/status`` lines for the token totals and the subscription usage."""
    lines = [
        "Tokens: none reported yet (Muse reports them after each model step)"
        if tokens is None
        else f"Tokens: {tokens.total:,} this session ({tokens.prompt:,} prompt, "
        f"{tokens.output:,} output)"
    ]
    if plan is not None:
        window = f"{plan.window_minutes}-minute" if plan.window_minutes else "current"
        lines.append(
            f"Plan usage: {plan.window_percent}% of the {window} window, "
            f"{plan.weekly_percent}% of the week"
        )
    return lines
