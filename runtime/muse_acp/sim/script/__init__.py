"""What a turn of the fake model is asked to do: plain values, below every session.

Contract: ``directives`` parses the ``sim:`` script language of a prompt; ``turn_requests``
holds a turn as a client asked for it, steered it or stopped it. These modules keep no state
and import nothing of muse-sim outside this package.
"""
