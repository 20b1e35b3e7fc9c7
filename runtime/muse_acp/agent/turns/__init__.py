"""One prompt turn on a Muse host, from ``turn/start`` until it settles, and what follows.

``turn`` drives it, ``relay`` carries host events to the client during and after it
(``background``), ``watchdog`` fails a silent host, ``interactions`` asks the client for
approvals and answers, ``work`` is what occupies a session and ``prompt_queue`` the prompts
waiting for it, ``steering_queue`` and ``corrections`` steer it. Sees neither the session nor
the connection's context.
"""

__all__: list[str] = []
