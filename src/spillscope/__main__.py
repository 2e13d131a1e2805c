"""``python -m spillscope`` — the same entry point as the ``spillscope`` console script."""

from .frontends.cli.entry import run

run()
