"""How the agent says that something failed, in one place.

``failures`` turns a failed or interrupted turn into an ACP stop reason or error with its
``data.failure``; ``workspace`` refuses a ``cwd`` that cannot be a session's root; ``notices``
words a warning for the user, which a session's outlet sends as an ACP notice or chat text.
They import no other part of the agent.
"""

__all__: list[str] = []
