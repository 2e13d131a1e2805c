"""``python -m spillscope`` — the same entry point as the ``spillscope`` console script."""

from .cli import main

raise SystemExit(main())
