"""Token and subscription usage: the usage_update and /status lines made of Muse's reports."""

from __future__ import annotations

from muse_acp.agent.translation.status import ContextUse
from muse_acp.agent.translation.usage import (
    PlanUse,
    TokenUse,
    usage_lines,
    usage_update,
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


def test_no_usage_update_before_the_window_size_is_known() -> None:
    assert usage_update(None, TokenUse(1, 1, 2, 2), None) is None


def test_a_usage_update_carries_tokens_and_subscription_shares() -> None:
    update = usage_update(ContextUse(50, 1000), TokenUse(300, 30, 330, 220), PlanUse(4, 9, 300))
    assert update is not None
    assert (update.used, update.size) == (220, 1000)
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
