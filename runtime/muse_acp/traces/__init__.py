"""Session traces: what muse-acp and its hosts said, recorded to replay a user's bug.

Contract: with ``--trace`` or ``MUSE_ACP_TRACE`` (``redacted`` or ``full``; ``config``), each
ACP connection of ``muse-acp serve`` writes one trace file under ``AdapterConfig.traces``: a
``header`` line, then one JSON line per ACP frame in or out (``"on": "acp"``), per MSP frame to
or from each host the connection started (``"on": "msp1"``...; ``"dir"`` is ``out`` towards the
peer, ``in`` from it), and per decision of muse-acp (``"decision"``), each with ``t``, the
milliseconds since the trace began (monotonic). ``recorder`` takes frames on the hot path and
hands them to a writer process (``writer``); ``sink`` owns the file (owner-only, capped, oldest
traces pruned); ``redaction`` decides what of a frame is kept.
"""

from muse_acp.traces.recorder import Tracer, host_observer, tracer_for
from muse_acp.traces.redaction import PLACEHOLDER, Redactor, is_placeholder

__all__ = ["PLACEHOLDER", "Redactor", "Tracer", "host_observer", "is_placeholder", "tracer_for"]
