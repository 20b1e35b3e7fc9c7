"""The ``initialize`` exchange: what the agent knows before it has any session.

``capabilities`` (what the client negotiated, what the agent advertises), ``startup`` (the
probe of Muse and the answer to ``initialize``), ``early`` (that answer before the event loop
runs) and ``file_change_report`` (the JetBrains reports of the files a prompt changed, which a
client opts into there). Knows no host keeping, session or handler.
"""

__all__: list[str] = []
