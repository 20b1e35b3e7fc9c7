"""``muse-acp serve`` keeps large buffers for reuse instead of faulting fresh memory in per page."""

from __future__ import annotations

import subprocess
import sys

import pytest

WAIT = 60.0

# One stored-output page's worth of buffers (frame, decoded text, answer, ...), made and freed
# again and again, as the adapter does per page; prints the minor page faults per round.
_ROUNDS = r"""
import resource, sys
from muse_acp.heap import keep_large_buffers
if sys.argv[1] == "kept":
    assert keep_large_buffers()
def page():
    buffers = [b"x" * (1 << 20) for _ in range(6)]
    del buffers
page()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(40):
    page()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 40)
"""


def _faults_per_round(mode: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _ROUNDS, mode],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    return float(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is tuned on Linux")
def test_a_page_of_buffers_is_reused_rather_than_faulted_in_again() -> None:
    kept = _faults_per_round("kept")
    # Six fresh MiB would be 1,536 faults of 4 KiB; reused buffers fault in nothing new.
    assert kept < 16
    assert _faults_per_round("default") > 8 * max(kept, 1)
