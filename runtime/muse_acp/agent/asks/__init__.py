"""Muse's approvals and questions as the client sees them, and the answers back.

Pure mapping, no I/O: ``permissions`` (approvals as ACP permission requests), ``questions``
(questions as form elicitations) and ``ask_failures`` (what could not be asked or answered).
Asking the client and answering Muse is the turn's part (``turns.interactions``).
"""

__all__: list[str] = []
