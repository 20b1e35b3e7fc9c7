"""What a muse-sim process is started with: the command line's parts and its configuration.

Contract: ``versions`` (the versions it plays), ``serve_args`` and ``exec_args`` (the commands'
flags), ``settings`` (state directory, version, faults and flags of one process), ``faults``
(``MUSE_SIM_FAULTS``), ``quirks`` (``MUSE_SIM_QUIRKS``), ``mcp_settings`` (Muse's settings file)
and ``accounts`` (skills, login and logout). Light enough for a client's probes: these modules
import nothing of muse-sim outside this package.
"""
