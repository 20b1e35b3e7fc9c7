"""Side-by-side performance figures for muse-acp: ``python -m bench`` (or ``nox -s bench``).

Each figure module measures one thing against a peer or a physical limit and returns a
``report.Figure``: ``runtime_throughput`` (the JSON-RPC runtime against the official ACP SDK and
a plain pipe), ``relay`` (a turn through ``muse-acp serve`` against the same turn read straight
from the host), ``stored_output`` (``_muse/readOutput`` against a pipe), ``cold_start`` (spawn to
``initialize`` answer), ``first_update`` (prompt to the first words of the reply, relayed and
direct, warm and cold), ``traced_relay`` (the relay with a session trace written against
without), ``growth`` (time and peak memory as tool output grows), ``idle`` (the adapter's CPU
and wake-ups with idle sessions open), ``session_list`` (``session/list`` pages over 10,000
stored sessions against 100), ``session_load`` (``session/load`` of long histories against
reading them from the host; ``history`` writes them into the simulator's store) and
``many_sessions``. Every figure runs its peers as separate processes on the same machine, and
every wait is bounded.
"""
