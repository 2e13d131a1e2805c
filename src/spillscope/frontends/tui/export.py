"""Export one message's exact UTF-8 text: to a file — never under the spill root or the
logs, and only under the export directory when one was named — or, in a browser, as a
download.

Separate because it is the one place the TUI writes a file, so its guard rails live alone.
A TUI served to a browser (``spillscope serve``) is driven by whoever holds its socket:
it writes nothing on the server's disk unless the operator started ``serve`` with
``--allow-export DIR`` (passed on as ``tui --export-dir DIR``); by default the export is
delivered to the browser as a download instead.
"""

from __future__ import annotations

import io
import os
import re
from typing import Any, Sequence

from textual.app import App

from ...util.text import js_utf8, lone_surrogate_count
from .document import Document


def _inside(target: str, directory: str) -> bool:
    real = os.path.realpath(directory)
    return target == real or target.startswith(real.rstrip("/") + "/")


def export_message(document: Document, message: int, path: str, forbidden: Sequence[str],
                   overwrite: bool = False, *, only_under: str | None = None) -> tuple[int, int]:
    """Write message text as UTF-8 to ``path`` — never under the spill root or the logs
    (``forbidden``), and only under ``only_under`` when it is given (else :class:`ValueError`).
    An existing file is replaced only with ``overwrite`` (else :class:`FileExistsError`)."""
    # The real path: a symlink (or `..`) cannot lead a checked name somewhere else.
    target = os.path.realpath(path)
    if only_under is not None and (target == os.path.realpath(only_under) or not _inside(target, only_under)):
        raise ValueError(f"refusing to write outside the export directory {only_under}")
    for root in forbidden:
        if _inside(target, root):
            raise ValueError("refusing to write inside the spill root or the log directory")
    text = document.read(message)
    data = js_utf8(text)
    # O_EXCL: the check for an existing file and the create are one step (no race).
    mode = os.O_TRUNC if overwrite else os.O_EXCL
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | mode | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return len(data), lone_surrogate_count(text)


def download_name(path: str, message: int) -> str:
    """The file name a download is offered under: the artifact's name, in characters that
    are safe in a ``Content-Disposition`` header and on any file system."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(path))[:120].lstrip(".") or "artifact"
    return f"{base}.message-{message}.txt"


def deliver_message(app: App[Any], document: Document, message: int) -> tuple[str, int, int]:
    """Send message text, exact UTF-8, to the browser as a download; nothing is written on
    the server's disk. Returns the name it is offered under, its bytes and its lone surrogates."""
    text = document.read(message)
    data = js_utf8(text)
    name = download_name(document.path, message)
    app.deliver_binary(io.BytesIO(data), save_filename=name, open_method="download",
                       mime_type="text/plain; charset=utf-8", name="export")
    return name, len(data), lone_surrogate_count(text)
