"""muse-acp: an Agent Client Protocol agent for the Muse Code host."""

__version__ = "0.1.0"
"""The adapter's version (the package metadata is built from it)."""
