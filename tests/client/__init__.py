"""Tests of the typed client library ``muse_acp.client``."""
