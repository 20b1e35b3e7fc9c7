"""Local slash commands: what ``/status``, ``/review``, ``/goal`` and the rest do.

``commands`` parses and dispatches them; each command's logic is a module of its own
(``review`` over ``git_snapshot``, ``goal``, ``compaction``, ``plan_mode``, ``mcp_listing``,
``account``), and ``session_commands`` sends the MSP commands they need outside any turn.
``readiness`` is what a session needs of Muse before the session methods answer (sign-in and
the model menu), over ``account``.
"""

__all__: list[str] = []
