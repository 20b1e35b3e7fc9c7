"""``python -m muse_acp.sim``: the same command line as ``muse-sim``."""

from muse_acp.sim.cli import main

raise SystemExit(main())
