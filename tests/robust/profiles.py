"""How hard the robustness suites fuzz: a quick run in the normal suite, a long one on demand.

Contract: ``fuzz_settings(quick)`` returns the hypothesis settings of one fuzz test. By default
it runs ``quick`` examples; ``MUSE_ACP_FUZZ_EXAMPLES`` (what ``nox -s fuzz`` sets) replaces that
count for every fuzz test. Examples are derandomized (a fixed, repeatable sequence, no example
database) when ``HYPOTHESIS_PROFILE`` is ``ci`` or the ``CI`` variable is set, so a CI failure
reproduces anywhere; otherwise each run explores new examples and remembers failing ones.
Deadlines are off because every example waits on a real process.
"""

from __future__ import annotations

import os
from typing import Final

from hypothesis import HealthCheck, settings

__all__ = ["EXAMPLES_VARIABLE", "fuzz_settings"]

EXAMPLES_VARIABLE: Final = "MUSE_ACP_FUZZ_EXAMPLES"
PROFILE_VARIABLE: Final = "HYPOTHESIS_PROFILE"


def _examples(quick: int) -> int:
    raw = os.environ.get(EXAMPLES_VARIABLE, "").strip()
    if not raw:
        return quick
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{EXAMPLES_VARIABLE} must be a positive whole number, got {raw!r}")
    return int(raw)


def _derandomized() -> bool:
    return os.environ.get(PROFILE_VARIABLE) == "ci" or bool(os.environ.get("CI"))


def fuzz_settings(quick: int) -> settings:
    """Settings for a fuzz test that runs ``quick`` examples in the normal suite."""
    derandomize = _derandomized()
    chosen = settings(
        max_examples=_examples(quick),
        deadline=None,
        derandomize=derandomize,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )
    return settings(chosen, database=None) if derandomize else chosen
