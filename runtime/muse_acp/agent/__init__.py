"""The ACP agent side of muse-acp: how a Muse host's sessions and turns appear to an ACP client.

Sub-packages by protocol concept, each stating its contract in its ``__init__``, stacked so that
each imports only those below it (see ``tests/agent/test_structure.py``): ``errors``, ``asks``,
``mcp``, ``handshake``, ``options``, ``hosting``, ``cards``, ``translation``, ``turns``,
``sessions``, then the module ``context`` (what one connection's handlers share), then
``announcements``, ``prompts``, ``commands``, ``methods`` (one module per ACP method family),
their tables (the module ``routes``), and ``server`` on top, which imports ``routes`` only once
``initialize`` is answered.
"""

__all__: list[str] = []
