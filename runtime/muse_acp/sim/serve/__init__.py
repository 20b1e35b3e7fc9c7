"""What a client runs on the simulated ``muse``: MSP served, a transcript replayed, or ``exec``.

Contract: ``host`` serves one client over MSP (handshake, admission, common checks) with the
method handlers ``commands``, ``resume``, ``controls``, ``reads``, ``mcp``, ``goals`` and
``compaction``; ``replay`` plays back a recorded conversation; ``exec`` is one headless run.
The top of the package tree: only the command line (``muse_acp.sim.cli``) imports it.
"""
