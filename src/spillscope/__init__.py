"""spillscope: the spill storage of an agent harness, and an inspector for it.

The core (``spill``, ``reference``, ``inspect``) never imports a front end; the TUI,
the CLI and the notebook objects are thin layers on top of it.
"""

__version__ = "0.1.0"
