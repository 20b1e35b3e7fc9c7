"""Tests of the JSON-RPC runtime ``muse_acp.rpc``."""
