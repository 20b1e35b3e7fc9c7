"""The handlers of the ACP methods, one module per method family.

Lifecycle (new, load, resume, fork, close), settings, prompting (prompt, cancel), steering,
listing, deletion, auth, stored output and task control. No method module imports another;
``muse_acp.agent.routes`` tables them.
"""

__all__: list[str] = []
