"""``python -m muse_acp`` is the ``muse-acp`` command."""

from muse_acp.cli import main

main()
