"""Setting muse-acp up in an editor: ``muse-acp install`` / ``uninstall`` for Zed and JetBrains.

``targets`` knows where each editor keeps its agent settings and what muse-acp's entry holds,
``jsonc`` edits JSON with comments in place, ``install`` plans and writes the change. Nothing
here is imported by the agent.
"""

__all__: list[str] = []
