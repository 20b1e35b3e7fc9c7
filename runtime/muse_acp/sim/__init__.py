"""muse-sim: a simulated Muse Code host speaking MSP, for testing and demonstrating muse-acp.

``muse-sim`` (or ``python -m muse_acp.sim``) behaves like the ``muse`` binary as far as an MSP
client can observe: ``--version``, ``serve`` (MSP over stdio, or ``--replay`` of a recorded
transcript), ``skills list``, ``login`` and ``logout``. Its turns come from a deterministic fake
model driven by ``sim:`` directives in the prompt (see ``directives``); its sessions are durable
in a state directory, so later or concurrent host processes can resume or read them; host
faults can be injected with ``MUSE_SIM_FAULTS`` (see ``faults``) and behaviours of particular
real hosts played with ``MUSE_SIM_QUIRKS`` (see ``quirks``). It plays every version that has an
MSP bundle, each as that version's bundle says (see ``profile``).

Sub-packages, bottom up (each imports only the ones above it in this list):

* ``options``: the command line's parts and configuration (versions, flags, settings, faults,
  quirks, accounts), light enough for a client's probes;
* ``script``: the ``sim:`` directives of a prompt and the turn requests of a client;
* ``state``: wire basics (profile, ids, errors, outbox), durable sessions and the host context;
* ``model``: the fake model that plays turns (items, tools, approvals, questions, notices,
  background work, recovery);
* ``serve``: the MSP endpoint and its method handlers, ``--replay`` and ``exec``.

At the top: ``cli`` (the command line) and ``launcher``, scripts and scratch worlds that stand
``muse-sim`` in for the Muse executable (for the demo, the benchmarks and the tests).

The package imports nothing at import time, so the command line starts fast.
"""
