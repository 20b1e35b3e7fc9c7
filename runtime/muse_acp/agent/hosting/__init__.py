"""Muse host processes kept for the agent's work, and what is read from them.

``starting`` (how hosts are started), ``hosts`` (host keepers, ``ask`` and the one mapping of
a failed host call), ``execution`` (a
session's execution host) with its ``approval_policy``, ``mcp_overlay`` (the settings overlay)
and ``permission_profile`` (what the overlay changes of a saved profile), the legacy exec
backend's run files (``exec_runs``, over ``private_files``), and the skills catalog
(``skills``). Knows no session or client update.
"""

__all__: list[str] = []
