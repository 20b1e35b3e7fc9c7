"""What one host process holds and how it writes it: wire basics, durable state and sessions.

Contract: ``profile`` (wire bindings per host version), ``ids`` (ids, timestamps, cursors),
``errors`` (host errors), ``wire`` (the outbox and log lines), ``store`` and ``fold`` (durable
sessions and their folded state), ``session`` (a session this process holds) and ``context``
(what every part of the host shares). Imports only ``options`` and ``script``: the turn side of
a session is typed by the protocols of ``session``, never by the model that plays it.
"""
