"""Muse host management: finding and probing the executable, running ``muse serve`` processes,
and speaking MSP to them as a client."""
