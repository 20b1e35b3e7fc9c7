"""Token and subscription usage as Muse reports it: ACP ``usage_update`` and ``/status`` lines.

Contract (pure): ``TokenUse.from_params`` reads ``session/tokenUsage`` (after every model step):
the session's running totals (``cumulative``, else this step's counts added up), the step's
tokens in context, the cache counts Muse reported (the step's; the session's from 1.4.2) and
Muse's cost estimate (``host_cost``). ``PlanUse.from_usage`` reads the account's subscription
usage (``usage/changed``, ``usage/read``; Muse 1.3.0 and newer). The context window's use
(``WindowUse``) comes from ``session/contextUsage`` with both counts (``window_use``) or a token
report (``usage_update``: the step's tokens); as the outlet sends any usage update it adds
(``with_usage``, ``usage_json``) ``cost``, Muse's estimate in US dollars (the unit Muse
declares), and ``_meta["muse/usage"]`` (``usage_report``): token totals, cache counts, the label
saying the cost is Muse's estimate, subscription shares. A cost not reported, or not a finite
amount of at least 0 (logged at debug), is no ``cost``, never 0. ACP requires ``size``, so
nothing is sent before Muse reported its context window; ``usage_lines`` serves ``/status``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Final, NamedTuple, get_args

from pydantic_core import to_json

from muse_acp.agent.translation.status import ContextUse
from muse_acp_wire import acp, msp
from muse_acp_wire._base import WireModel

__all__ = [
    "COST_CURRENCY",
    "WINDOW_ONLY",
    "HostCost",
    "PlanUse",
    "StepCache",
    "TokenUse",
    "WindowUse",
    "host_cost",
    "usage_json",
    "usage_lines",
    "usage_report",
    "usage_update",
    "window_use",
    "with_usage",
]

logger: Final = logging.getLogger("muse_acp.agent")

COST_CURRENCY: Final = "USD"
"""Muse declares its session cost in US dollars (``CumulativeCost.usd``)."""
WINDOW_ONLY: Final = frozenset({"session_update", "used", "size"})
"""The members set in a ``usage_update`` that carries the context window's use alone."""


@dataclass(frozen=True, slots=True)
class HostCost:
    """Muse's estimate of what the session cost so far."""

    usd: float
    partial: bool
    """Muse could not price every model call, so the amount leaves some out."""


def host_cost(cumulative: msp.CumulativeTokenUsage | None) -> HostCost | None:
    """Muse's cost estimate in ``cumulative``, or None when there is none to show: absent, null,
    or not a finite amount of at least 0 (logged at debug)."""
    cost = None if cumulative is None else cumulative.cost
    if cost is None:
        return None
    if not math.isfinite(cost.usd) or cost.usd < 0:
        logger.debug("ignored Muse's session cost %r: not an amount of money", cost.usd)
        return None
    return HostCost(cost.usd, cost.partial)


class StepCache(NamedTuple):
    """A model step's prompt-cache counts (``acp.MuseStepCache``); None: not reported."""

    cached: int | None
    read: int | None
    written: int | None


_NO_STEP_CACHE: Final = StepCache(None, None, None)


def _wire(model: type[WireModel], *fields: str) -> tuple[str, ...]:
    """The members ``fields`` of ``model`` as they are sent (their aliases), read from the
    generated model once, so the plain-value encodings below never spell them again."""
    return tuple(model.model_fields[field].alias or field for field in fields)


_STEP_CACHE_MEMBERS: Final = _wire(
    acp.MuseStepCache, "cached_tokens", "cache_read_tokens", "cache_write_tokens"
)
"""``acp.MuseStepCache``'s members as sent, in ``StepCache``'s order."""
_PROMPT, _OUTPUT, _TOTAL, _CACHE_READ, _CACHE_WRITE = _wire(
    acp.MuseTokenTotals,
    "prompt_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)
_TOKENS, _LAST_STEP, _COST, _SUBSCRIPTION = _wire(
    acp.MuseUsageReport, "tokens", "last_step", "cost", "subscription"
)
_ESTIMATED_BY, _PARTIAL = _wire(acp.MuseCostEstimate, "estimated_by", "partial")
(_ESTIMATOR,) = get_args(acp.MuseCostEstimate.model_fields["estimated_by"].annotation)
_WINDOW_PERCENT, _WEEKLY_PERCENT = _wire(
    acp.MuseSubscriptionUsage, "window_used_percent", "weekly_used_percent"
)
(_USAGE_META,) = _wire(acp.MuseUsageUpdateMeta, "muse_usage")
_KIND, _USED, _SIZE, _UPDATE_COST, _META = _wire(
    acp.UsageUpdateSessionUpdate, "session_update", "used", "size", "cost", "field_meta"
)
(_USAGE_UPDATE,) = get_args(acp.UsageUpdateSessionUpdate.model_fields["session_update"].annotation)
_AMOUNT, _CURRENCY = _wire(acp.Cost, "amount", "currency")


@dataclass(frozen=True, slots=True)
class TokenUse:
    """The session's token totals, and the tokens the latest model step had in context."""

    prompt: int
    output: int
    total: int
    step: int
    cache_read: int | None = None
    """The session's cache reads and writes, where Muse reports them (1.4.2 and newer)."""
    cache_write: int | None = None
    step_cache: StepCache | None = None
    """The latest step's cache counts, when Muse reported any."""
    cost: HostCost | None = None

    @classmethod
    def from_params(cls, params: msp.SessionTokenUsageParams, before: TokenUse | None) -> TokenUse:
        counts = params.usage
        step = params.total_tokens or (counts.input_tokens + counts.output_tokens)
        cached = StepCache(
            counts.cached_tokens, counts.cache_read_tokens, counts.cache_write_tokens
        )
        step_cache = None if cached == _NO_STEP_CACHE else cached
        if params.cumulative is not None:
            c = params.cumulative
            return cls(
                c.prompt_tokens,
                c.output_tokens,
                c.total_tokens,
                step,
                c.cache_read_tokens,
                c.cache_write_tokens,
                step_cache,
                host_cost(c),
            )
        prompt = (before.prompt if before else 0) + counts.input_tokens
        output = (before.output if before else 0) + counts.output_tokens
        return cls(prompt, output, prompt + output, step, step_cache=step_cache)


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


class WindowUse(NamedTuple):
    """A ``usage_update`` of the context window's use alone, its model not built: the outlet
    sends it with the session's figures (``usage_json``)."""

    used: int
    size: int

    def model(self) -> acp.UsageUpdateSessionUpdate:
        """The update as its model."""
        return acp.UsageUpdateSessionUpdate(
            session_update="usage_update", used=self.used, size=self.size
        )


def window_use(params: msp.SessionContextUsageParams) -> WindowUse | None:
    """The context window's use Muse reports, or None unless both token counts are known."""
    if params.used_tokens is None or params.window_tokens is None:
        return None
    return WindowUse(params.used_tokens, params.window_tokens)


def usage_update(context: ContextUse | None, tokens: TokenUse | None) -> WindowUse | None:
    """The context window's use for what is known (the step's tokens, else the window's use),
    or None before the window size is known; the outlet adds the session's figures."""
    if context is None:
        return None
    return WindowUse(tokens.step if tokens is not None else context.used, context.size)


def usage_json(window: WindowUse, tokens: TokenUse | None, plan: PlanUse | None) -> bytes:
    """``with_usage(window.model(), tokens, plan)`` as its model encodes (by alias, without
    unset members), made of plain values and encoded by pydantic-core: the same members in the
    same order, each value as the model holds it. No model is built or validated: every
    figure comes from a validated host report, whose counts are at least 0."""
    update: dict[str, object] = {_KIND: _USAGE_UPDATE, _USED: window.used, _SIZE: window.size}
    if tokens is not None and tokens.cost is not None:
        update[_UPDATE_COST] = {_AMOUNT: float(tokens.cost.usd), _CURRENCY: COST_CURRENCY}
    if tokens is not None or plan is not None:
        update[_META] = {_USAGE_META: usage_report(tokens, plan)}
    return to_json(update)


def with_usage(
    update: acp.UsageUpdateSessionUpdate, tokens: TokenUse | None, plan: PlanUse | None
) -> acp.UsageUpdateSessionUpdate:
    """``update`` carrying Muse's latest cost estimate and its token and subscription figures in
    ``_meta["muse/usage"]`` (unchanged when it has its own ``_meta`` or nothing is known)."""
    if update.field_meta is not None or (tokens is None and plan is None):
        return update
    changes: dict[str, object] = {"field_meta": {_USAGE_META: usage_report(tokens, plan)}}
    if tokens is not None and tokens.cost is not None:
        changes["cost"] = acp.Cost(amount=tokens.cost.usd, currency=COST_CURRENCY)
    if update.model_fields_set == WINDOW_ONLY:  # nearly every one: made whole, not copied
        return acp.UsageUpdateSessionUpdate(
            session_update="usage_update", used=update.used, size=update.size, **changes
        )
    return update.model_copy(update=changes)


def usage_report(tokens: TokenUse | None, plan: PlanUse | None) -> dict[str, object]:
    """``acp.MuseUsageReport`` of ``tokens`` and ``plan`` as it is sent (by alias, without the
    members that are None), made straight from the figures: building the report's five models
    to dump them cost more than all else a usage update takes. Every figure comes from a
    validated host report whose counts are at least 0, so the report's bounds hold."""
    report: dict[str, object] = {}
    if tokens is not None:
        totals = {_PROMPT: tokens.prompt, _OUTPUT: tokens.output, _TOTAL: tokens.total}
        if tokens.cache_read is not None:
            totals[_CACHE_READ] = tokens.cache_read
        if tokens.cache_write is not None:
            totals[_CACHE_WRITE] = tokens.cache_write
        report[_TOKENS] = totals
        if tokens.step_cache is not None:
            report[_LAST_STEP] = {
                name: count
                for name, count in zip(_STEP_CACHE_MEMBERS, tokens.step_cache, strict=True)
                if count is not None
            }
        if tokens.cost is not None:
            report[_COST] = {_ESTIMATED_BY: _ESTIMATOR, _PARTIAL: tokens.cost.partial}
    if plan is not None:
        report[_SUBSCRIPTION] = {
            _WINDOW_PERCENT: plan.window_percent,
            _WEEKLY_PERCENT: plan.weekly_percent,
        }
    return report


def usage_lines(tokens: TokenUse | None, plan: PlanUse | None) -> list[str]:
    """``/status`` lines for the token totals, Muse's cost estimate and the subscription usage."""
    lines = [
        "Tokens: none reported yet (Muse reports them after each model step)"
        if tokens is None
        else f"Tokens: {tokens.total:,} this session ({tokens.prompt:,} prompt, "
        f"{tokens.output:,} output)"
    ]
    if tokens is not None and tokens.cost is not None:
        left_out = ", leaving out calls it could not price" if tokens.cost.partial else ""
        lines.append(f"Cost: ${tokens.cost.usd:,.4f} so far (Muse's estimate{left_out})")
    if plan is not None:
        window = f"{plan.window_minutes}-minute" if plan.window_minutes else "current"
        lines.append(
            f"Plan usage: {plan.window_percent}% of the {window} window, "
            f"{plan.weekly_percent}% of the week"
        )
    return lines
