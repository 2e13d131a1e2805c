"""Export one message's exact UTF-8 text to a file — never under the spill root or the logs.

Separate because it is the one place the TUI writes a file, so its guard rails live alone."""

from __future__ import annotations

import os

from ...util.text import js_utf8, lone_surrogate_count
from .document import Document

def export_message(document: Document, message: int, path: str, forbidden: list[str],
                   overwrite: bool = False) -> tuple[int, int]:
    """Write message text as UTF-8 to ``path`` — never under the spill root or the logs.
    An existing file is replaced only with ``overwrite`` (else :class:`FileExistsError`)."""
    target = os.path.realpath(path)
    for root in forbidden:
        real = os.path.realpath(root)
        if target == real or target.startswith(real.rstrip("/") + "/"):
            raise ValueError("refusing to write inside the spill root or the log directory")
    text = document.read(message)
    data = js_utf8(text)
    # O_EXCL: the check for an existing file and the create are one step (no race).
    mode = os.O_TRUNC if overwrite else os.O_EXCL
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | mode | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return len(data), lone_surrogate_count(text)
