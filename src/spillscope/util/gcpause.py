"""Pausing the cyclic garbage collector while a pass builds many acyclic records.

Shared by the whole-root passes (``verify``'s :func:`~spillscope.inspect.verify.inspect_root`,
``stats``' walk) so each does not keep its own copy of the same context manager.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def acyclic() -> Iterator[None]:
    """Pause the cyclic garbage collector while records pile up: every record built here
    is acyclic (tuples, dataclasses, dicts of them) and freed by reference counting, yet
    the collector re-walks all of them again and again as they accumulate (at 200,000
    artifacts a third of the run, and growing faster than the root)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
