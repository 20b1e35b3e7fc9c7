"""muse-acp: an Agent Client Protocol agent for the Muse Code host."""
