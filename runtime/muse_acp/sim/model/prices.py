"""What the simulated host counts and charges for a model step beyond its token totals.

Contract: ``step_cache(first)`` gives a step's cache counts: a session's first model step writes
the fixed prompt prefix (``CACHED_PREFIX`` tokens) to the provider's cache, every later step
reads it back. ``session_totals(before, counts, model_id)`` gives the cumulative members a host
adds from 1.4.2 on, from the previous cumulative block (None before the session's first step)
and this step: the cache reads and writes added up, and ``cost`` (``{usd, partial}``), the
running sum of each step priced with ``PRICES``. A step of a model without a price adds nothing
and marks the cost partial for the rest of the session; before any step was priced there is no
cost, and the member is left out (Muse declares it optional, not nullable). ``PRICES`` is the
simulator's own table (US dollars per million tokens), not Muse's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Final

from muse_acp_wire.msp import CumulativeCost, TokenCounts

__all__ = ["CACHED_PREFIX", "PRICES", "Price", "session_totals", "step_cache"]

CACHED_PREFIX: Final = 1024
"""Tokens of every prompt that the provider keeps in its cache after a session's first step."""

_MILLION: Final = Decimal(1_000_000)
_MICRO_DOLLAR: Final = Decimal("0.000001")
"""Costs are rounded to the millionth of a dollar."""


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens: fresh input, cache reads, output."""

    input: Decimal
    cache_read: Decimal
    output: Decimal

    def of(self, counts: TokenCounts) -> Decimal:
        read = counts.cache_read_tokens or 0
        fresh = max(0, counts.input_tokens - read)
        spent = fresh * self.input + read * self.cache_read + counts.output_tokens * self.output
        return spent / _MILLION


PRICES: Final[Mapping[str, Price]] = MappingProxyType(
    {
        "muse-spark-1.2": Price(Decimal("1.25"), Decimal("0.125"), Decimal("10")),
        "muse-spark-1.3": Price(Decimal("2.50"), Decimal("0.25"), Decimal("15")),
        "muse-spark-1.3-contributor": Price(Decimal("2"), Decimal("0.20"), Decimal("12")),
    }
)
"""The simulator's prices per model; a model missing here has no known price."""


def step_cache(first: bool) -> dict[str, int]:
    """The cache members of a step's ``TokenCounts`` (see the module contract)."""
    read = 0 if first else CACHED_PREFIX
    return {
        "cached_tokens": read,
        "cache_read_tokens": read,
        "cache_write_tokens": CACHED_PREFIX if first else 0,
    }


def session_totals(
    before: Mapping[str, Any] | None, counts: TokenCounts, model_id: str | None
) -> dict[str, Any]:
    """The cache totals and cost of the next cumulative block (see the module contract)."""
    totals: dict[str, Any] = {
        "cache_read_tokens": (before or {}).get("cacheReadTokens", 0)
        + (counts.cache_read_tokens or 0),
        "cache_write_tokens": (before or {}).get("cacheWriteTokens", 0)
        + (counts.cache_write_tokens or 0),
    }
    spent = None if before is None else before.get("cost")
    usd = None if spent is None else Decimal(str(spent["usd"]))
    # A session with steps but no cost had only unpriced steps so far.
    partial = (before is not None and spent is None) or (spent is not None and spent["partial"])
    price = PRICES.get(model_id or "")
    if price is None:
        partial = True
    else:
        usd = (usd or Decimal(0)) + price.of(counts)
    if usd is not None:
        rounded = float(usd.quantize(_MICRO_DOLLAR))
        totals["cost"] = CumulativeCost(usd=rounded, partial=partial)
    return totals
