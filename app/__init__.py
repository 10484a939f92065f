"""valuegraph's web app, JSON API and command line."""

__version__ = "0.1.0"  # the one place: pyproject.toml reads it, the CLI and /openapi.json show it
