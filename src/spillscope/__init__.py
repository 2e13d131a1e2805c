"""spillscope: the spill storage of an agent harness, and an inspector for it.

The core (``spill``, ``reference``, ``inspect``) never imports a front end; the TUI,
the CLI and the notebook objects are thin layers on top of it.
"""

__version__ = "0.1.0"


def open(root, logs=None, **kwargs):  # type: ignore[no-untyped-def]  # noqa: A001
    """Inspect a spill root in a notebook; see :mod:`spillscope.frontends.notebook`."""
    from .frontends.notebook import open as _open

    return _open(root, logs, **kwargs)
