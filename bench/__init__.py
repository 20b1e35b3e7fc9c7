"""Side-by-side performance figures for muse-acp: ``python -m bench`` (or ``nox -s bench``).

Each figure module measures one thing against a peer or a physical limit and returns a
``report.Figure``: ``runtime_throughput`` (the JSON-RPC runtime against the official ACP SDK and
a plain pipe), ``relay`` (a turn through ``muse-acp serve`` against the same turn read straight
from the host), ``stored_output`` (``_muse/readOutput`` against a pipe), ``cold_start`` (spawn to
``initialize`` answer), ``traced_relay`` (the relay with a session trace written against without),
``growth`` (time and peak memory as tool output grows) and
``session_list`` (``session/list`` pages over 10,000 stored sessions against 100). Every figure
runs its peers as separate processes on the same machine, and every wait is bounded.
"""
