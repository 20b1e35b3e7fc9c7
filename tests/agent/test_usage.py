"""Token and subscription usage: the usage_update and /status lines made of Muse's reports."""

from __future__ import annotations

import logging
import math
from typing import Any

import pytest

from muse_acp.agent.translation.status import ContextUse
from muse_acp.agent.translation.usage import (
    HostCost,
    PlanUse,
    StepCache,
    TokenUse,
    WindowUse,
    host_cost,
    usage_json,
    usage_lines,
    usage_update,
    window_use,
    with_usage,
)
from muse_acp_wire import acp, msp


def _tokens(
    input_tokens: int, output_tokens: int, **members: object
) -> msp.SessionTokenUsageParams:
    return msp.SessionTokenUsageParams.model_validate(
        {
            "sessionId": "s",
            "viewCursor": "v:s:1",
            "turnId": "t",
            "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens},
            **members,
        }
    )


def test_totals_come_from_cumulative_or_add_up_step_by_step() -> None:
    first = TokenUse.from_params(_tokens(100, 10), None)
    second = TokenUse.from_params(_tokens(200, 20), first)
    assert (second.prompt, second.output, second.total, second.step) == (300, 30, 330, 220)
    reported = TokenUse.from_params(
        _tokens(5, 5, cumulative={"promptTokens": 7, "outputTokens": 3, "totalTokens": 10}), None
    )
    assert (reported.total, reported.step) == (10, 10)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"usedTokens": 5120, "windowTokens": 200000, "pressure": "normal"}, (5120, 200000)),
        ({"usedTokens": 0, "windowTokens": 0}, (0, 0)),
        ({"usedTokens": 5120}, None),
        ({"windowTokens": 200000}, None),
        ({"pressure": "high"}, None),
    ],
)
def test_context_usage_is_sent_only_when_both_token_counts_are_known(
    usage: dict[str, Any], expected: tuple[int, int] | None
) -> None:
    report = {"sessionId": "s", "viewCursor": "v:s:1", **usage}
    window = window_use(msp.SessionContextUsageParams.model_validate(report))
    assert window == (None if expected is None else WindowUse(*expected))
    if window is not None and expected is not None:
        used, size = expected
        assert window.model().model_dump(by_alias=True, exclude_unset=True) == {
            "sessionUpdate": "usage_update",
            "used": used,
            "size": size,
        }


def test_no_usage_update_before_the_window_size_is_known() -> None:
    assert usage_update(None, TokenUse(1, 1, 2, 2)) is None


def test_a_usage_update_carries_tokens_and_subscription_shares() -> None:
    tokens, plan = TokenUse(300, 30, 330, 220), PlanUse(4, 9, 300)
    window = usage_update(ContextUse(50, 1000), tokens)
    assert window == WindowUse(220, 1000), "the step's tokens, in the window"
    update = with_usage(window.model(), tokens, plan)
    assert update.field_meta == {
        "muse/usage": {
            "tokens": {"promptTokens": 300, "outputTokens": 30, "totalTokens": 330},
            "subscription": {"windowUsedPercent": 4, "weeklyUsedPercent": 9},
        }
    }


def test_a_context_usage_update_gets_the_latest_figures_and_keeps_its_own_meta() -> None:
    plain = acp.UsageUpdateSessionUpdate(session_update="usage_update", used=1, size=2)
    assert with_usage(plain, None, None) is plain
    enriched = with_usage(plain, TokenUse(1, 1, 2, 2), None)
    assert enriched.field_meta is not None
    own = plain.model_copy(update={"field_meta": {"x": 1}})
    assert with_usage(own, TokenUse(1, 1, 2, 2), None).field_meta == {"x": 1}


def test_status_lines_say_what_is_known() -> None:
    assert usage_lines(None, None) == [
        "Tokens: none reported yet (Muse reports them after each model step)"
    ]
    lines = usage_lines(TokenUse(1200, 34, 1234, 1234), PlanUse(4, 9, 300))
    assert lines == [
        "Tokens: 1,234 this session (1,200 prompt, 34 output)",
        "Plan usage: 4% of the 300-minute window, 9% of the week",
    ]


def _totals(**members: Any) -> msp.CumulativeTokenUsage:
    return msp.CumulativeTokenUsage.model_validate(
        {"promptTokens": 70, "outputTokens": 30, "totalTokens": 100, **members}
    )


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ({}, None),
        ({"cost": None}, None),
        ({"cost": {"usd": 0.0123, "partial": False}}, HostCost(0.0123, False)),
        ({"cost": {"usd": 1.5, "partial": True}}, HostCost(1.5, True)),
        ({"cost": {"usd": 0, "partial": False}}, HostCost(0.0, False)),
        ({"cost": {"usd": "0.25", "partial": False}}, HostCost(0.25, False)),
        ({"cost": {"usd": math.nan, "partial": False}}, None),
        ({"cost": {"usd": math.inf, "partial": False}}, None),
        ({"cost": {"usd": -0.01, "partial": False}}, None),
    ],
    ids=["absent", "null", "priced", "partial", "zero", "decimal-string", "nan", "inf", "negative"],
)
def test_muses_cost_is_read_only_when_it_is_an_amount(
    members: dict[str, Any], expected: HostCost | None
) -> None:
    assert host_cost(_totals(**members)) == expected


def test_no_totals_no_cost_and_a_malformed_one_is_logged_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert host_cost(None) is None
    with caplog.at_level(logging.DEBUG, logger="muse_acp.agent"):
        assert host_cost(_totals(cost={"usd": -1, "partial": False})) is None
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]


def test_cache_counts_and_cost_come_from_the_token_report() -> None:
    report = _tokens(
        1300,
        20,
        usage={
            "inputTokens": 1300,
            "outputTokens": 20,
            "cachedTokens": 1024,
            "cacheReadTokens": 1024,
        },
        cumulative={
            "promptTokens": 2600,
            "outputTokens": 40,
            "totalTokens": 2640,
            "cacheReadTokens": 1024,
            "cacheWriteTokens": 1024,
            "cost": {"usd": 0.0042, "partial": False},
        },
    )
    use = TokenUse.from_params(report, None)
    assert (use.cache_read, use.cache_write, use.cost) == (1024, 1024, HostCost(0.0042, False))
    assert use.step_cache == StepCache(cached=1024, read=1024, written=None)
    older = TokenUse.from_params(_tokens(5, 5), None)
    assert (older.cache_read, older.cache_write, older.step_cache, older.cost) == (
        None,
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("cost", "expected_cost", "label"),
    [
        (
            HostCost(0.0042, False),
            {"amount": 0.0042, "currency": "USD"},
            {"estimatedBy": "muse", "partial": False},
        ),
        (
            HostCost(2.5, True),
            {"amount": 2.5, "currency": "USD"},
            {"estimatedBy": "muse", "partial": True},
        ),
        (None, None, None),
    ],
    ids=["estimate", "partial-estimate", "no-cost"],
)
def test_a_usage_update_carries_muses_cost_labelled_as_its_estimate(
    cost: HostCost | None, expected_cost: dict[str, Any] | None, label: dict[str, Any] | None
) -> None:
    tokens = TokenUse(
        2600,
        40,
        2640,
        1320,
        cache_read=1024,
        cache_write=1024,
        step_cache=StepCache(1024, None, None),
        cost=cost,
    )
    window = usage_update(ContextUse(1, 1000), tokens)
    assert window is not None
    for update in (
        with_usage(window.model(), tokens, None),
        acp.UsageUpdateSessionUpdate.model_validate_json(usage_json(window, tokens, None)),
        with_usage(
            acp.UsageUpdateSessionUpdate(session_update="usage_update", used=1, size=9),
            tokens,
            None,
        ),
    ):
        assert update is not None
        sent = update.model_dump(mode="json", by_alias=True, exclude_unset=True)
        assert sent.get("cost") == expected_cost, "no cost is sent as none, never as 0"
        report = sent["_meta"]["muse/usage"]
        assert report.get("cost") == label
        assert report["tokens"] == {
            "promptTokens": 2600,
            "outputTokens": 40,
            "totalTokens": 2640,
            "cacheReadTokens": 1024,
            "cacheWriteTokens": 1024,
        }
        assert report["lastStep"] == {"cachedTokens": 1024}


def test_status_says_what_muse_estimates_the_session_cost() -> None:
    priced = TokenUse(1200, 34, 1234, 1234, cost=HostCost(0.01234, False))
    assert usage_lines(priced, None)[1] == "Cost: $0.0123 so far (Muse's estimate)"
    partial = TokenUse(1200, 34, 1234, 1234, cost=HostCost(1234.5, True))
    assert usage_lines(partial, None)[1] == (
        "Cost: $1,234.5000 so far (Muse's estimate, leaving out calls it could not price)"
    )
    assert len(usage_lines(TokenUse(1200, 34, 1234, 1234), None)) == 1


def _report_from_models(tokens: TokenUse | None, plan: PlanUse | None) -> dict[str, Any]:
    """The usage report as the ACP models make it: the schema's own word for ``usage_report``."""
    report = acp.MuseUsageReport()
    if tokens is not None:
        report.tokens = acp.MuseTokenTotals(
            prompt_tokens=tokens.prompt,
            output_tokens=tokens.output,
            total_tokens=tokens.total,
            cache_read_tokens=tokens.cache_read,
            cache_write_tokens=tokens.cache_write,
        )
        if tokens.step_cache is not None:
            cached, read, written = tokens.step_cache
            report.last_step = acp.MuseStepCache(
                cached_tokens=cached, cache_read_tokens=read, cache_write_tokens=written
            )
        if tokens.cost is not None:
            report.cost = acp.MuseCostEstimate(estimated_by="muse", partial=tokens.cost.partial)
    if plan is not None:
        report.subscription = acp.MuseSubscriptionUsage(
            window_used_percent=plan.window_percent, weekly_used_percent=plan.weekly_percent
        )
    meta = acp.MuseUsageUpdateMeta(muse_usage=report)
    return meta.model_dump(mode="json", by_alias=True, exclude_none=True)


_STEP_CACHES = [
    None,
    StepCache(1024, None, None),
    StepCache(None, 0, 7),
    StepCache(1, 2, 3),
]
_TOKENS = [None] + [
    TokenUse(2600, 40, 2640, 1320, read, written, step, cost)
    for read, written in ((None, None), (1024, None), (None, 0), (1024, 512))
    for step in _STEP_CACHES
    for cost in (
        None,
        HostCost(0.0042, False),
        HostCost(2.5, True),
        HostCost(-0.0, False),
        HostCost(1e-7, False),
        HostCost(1e22, True),
    )
]


@pytest.mark.parametrize("plan", [None, PlanUse(4, 9, 300), PlanUse(120, 0)])
def test_the_usage_report_is_sent_as_the_acp_models_would_send_it(plan: PlanUse | None) -> None:
    """Both ways a usage update gets the session's figures, the model's (``with_usage``) and
    the window's use encoded straight (``usage_json``), give the bytes the ACP models give."""
    window = acp.UsageUpdateSessionUpdate(session_update="usage_update", used=220, size=1000)
    for tokens in _TOKENS:
        expected = window
        if tokens is not None or plan is not None:
            meta = _report_from_models(tokens, plan)
            expected = window.model_copy(update={"field_meta": meta})
        if tokens is not None and tokens.cost is not None:
            cost = acp.Cost(amount=tokens.cost.usd, currency="USD")
            expected = expected.model_copy(update={"cost": cost})
        encoded = expected.__pydantic_serializer__.to_json(
            expected, by_alias=True, exclude_unset=True
        )
        sent = with_usage(window, tokens, plan)
        # The very bytes: the same members in the same order.
        assert sent.__pydantic_serializer__.to_json(sent, by_alias=True, exclude_unset=True) == (
            encoded
        ), (tokens, plan)
        assert usage_json(WindowUse(220, 1000), tokens, plan) == encoded, (tokens, plan)
