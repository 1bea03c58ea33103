"""The package's version: its one source (pyproject.toml reads it, ``nelu.__version__`` is it)."""

__version__ = "0.1.0"
