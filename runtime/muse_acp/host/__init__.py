"""Muse host management: finding and probing the executable, choosing the MSP bindings a host is
read with, running ``muse serve`` processes, and speaking MSP to them as a client."""

__all__: list[str] = []
