"""muse-sim: a simulated Muse Code host speaking MSP, for testing and demonstrating muse-acp.

``muse-sim`` (or ``python -m muse_acp.sim``) behaves like the ``muse`` binary as far as an MSP
client can observe: ``--version``, ``serve`` (MSP over stdio, or ``--replay`` of a recorded
transcript), ``skills list``, ``login`` and ``logout``. Its turns come from a deterministic fake
model driven by ``sim:`` directives in the prompt (see ``directives``); its sessions are durable
in a state directory, so later or concurrent host processes can resume or read them; host
faults can be injected with ``MUSE_SIM_FAULTS`` (see ``faults``) and behaviours of particular
real hosts played with ``MUSE_SIM_QUIRKS`` (see ``quirks``). It plays every version that has an
MSP bundle, each as that version's bundle says (see ``profile``).

Modules, bottom up:

* the command line, light enough for a client's probes: ``cli``, ``versions``, ``serve_args``,
  ``exec_args`` and ``accounts`` (skills, login, logout);
* configuration: ``settings``, ``faults`` and ``quirks``;
* wire basics: ``profile`` (bindings per host version), ``ids``, ``errors``, ``wire``;
* durable state: ``store``, ``fold``, ``session``, ``context``;
* the fake model: ``directives``, ``turn``, ``outputs``, ``tools``, ``asks`` (approvals),
  ``questions``, ``notices`` (status, usage, names, view health, gaps), ``runner`` and
  ``recovery``;
* method handlers: ``commands``, ``resume``, ``controls`` and ``reads``, served by ``host``;
* ``replay``;
* ``launcher``: scripts and scratch worlds that stand ``muse-sim`` in for the Muse executable
  (for the demo, the benchmarks and the tests).

The package imports nothing at import time, so the command line starts fast.
"""
