"""The ACP agent side of muse-acp: how a Muse host's sessions and turns appear to an ACP client."""
