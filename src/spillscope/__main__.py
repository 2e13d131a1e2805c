"""``python -m spillscope`` — the same entry point as the ``spillscope`` console script."""

from .frontends.cli.main import run

run()
