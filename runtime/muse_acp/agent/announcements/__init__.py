"""State Muse reports outside a prompt's own events, kept and told to open sessions.

``catalog`` (Muse's model catalog, read without being asked) and ``session_state`` (a
session's usage, model and approval mode between and during turns). The first package above
the connection's context (``muse_acp.agent.context``).
"""

__all__: list[str] = []
