"""The package's version: the one source (``pyproject.toml`` reads it from here when building)."""

__version__ = "0.4.4"
