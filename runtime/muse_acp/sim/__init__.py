"""muse-sim: a simulated Muse Code host speaking MSP, for testing and demonstrating muse-acp.

``muse-sim`` (or ``python -m muse_acp.sim``) behaves like the ``muse`` binary as far as an MSP
client can observe, for every version that has an MSP bundle (``profile``): a deterministic fake
model driven by ``sim:`` directives (``directives``), durable sessions, injected faults
(``faults``) and quirks of real hosts (``quirks``); docs/muse-sim.md is its manual.

Sub-packages, bottom up, each importing only those before it: ``options`` (command line and
configuration), ``script`` (directives and turn requests), ``state`` (wire basics, durable
sessions, host context), ``model`` (the fake model), ``serve`` (the MSP endpoint, ``--replay``,
``exec``); on top ``cli`` and ``launcher``. The package imports nothing at import time, so the
command line starts fast.
"""
