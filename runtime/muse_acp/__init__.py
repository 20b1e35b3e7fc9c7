"""muse-acp: an Agent Client Protocol agent for the Muse Code host."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("muse-acp")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0"
