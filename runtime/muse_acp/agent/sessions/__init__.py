"""ACP sessions as the agent holds them, and what is kept or read of them.

``session`` (each ``AcpSession`` owns its work, hosts and queues, and the registry of them),
``outlet`` (the one way its updates reach the client), ``host_work`` (the workflows and background
tasks Muse runs for it), ``history`` (a session read back from Muse) and ``tombstones`` (what is
kept of a deleted one). Never sees the context.
"""

__all__: list[str] = []
