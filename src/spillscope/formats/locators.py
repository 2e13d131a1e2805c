"""Local-backend locators written on any system, and mapping them onto a local copy.

A locator is whatever the backend returned (FORMAT.md §8). The local backend's is an
absolute path: POSIX (``/tmp/dsh-spill-AbC123/session-<h>/<r>-bash.txt``) or Windows
(``C:\\Users\\me\\AppData\\Local\\Temp\\dsh-spill-AbC123\\session-<h>\\<r>-bash.txt``,
also a UNC ``\\\\server\\share\\...``). Extraction from a notice already undid the
escaping layers that were there (raw in a tool notice, one JSON layer in a reference
notice, one more in a log line), so the functions here see the exact path and never
rewrite a backslash: a Windows path's separators are split only when the path is
mapped onto a copy, and a POSIX path's backslashes are file-name characters.
"""

from __future__ import annotations

import re

_WINDOWS = re.compile(r"\A(?:[A-Za-z]:[\\/]|[\\/]{2}[^\\/])")
_SEPARATORS = re.compile(r"[\\/]+")
#: ``<root><sep>session-<12 hex><sep><12 hex>-<name>`` with either separator.
_ARTIFACT_TAIL = re.compile(r"[\\/]+session-[0-9a-f]{12}[\\/]+[0-9a-f]{12}-[^\\/]+\Z")


def is_windows_path(locator: str) -> bool:
    """A drive-letter (``C:\\`` or ``C:/``) or UNC (``\\\\server\\share``) absolute path."""
    return _WINDOWS.match(locator) is not None


def windows_parts(path: str) -> list[str]:
    """The components of a Windows path: separators are ``\\`` and ``/`` (runs count once)."""
    return [p for p in _SEPARATORS.split(path) if p]


def spill_root_of(locator: str) -> str | None:
    """The spill root a local-backend locator lies under (what ``--rebase`` wants), or None."""
    m = _ARTIFACT_TAIL.search(locator)
    return locator[: m.start()] if m is not None and m.start() > 0 else None


def rebase_locator(locator: str, old_root: str, new_root: str) -> str | None:
    """``locator`` moved from under ``old_root`` to under ``new_root`` (a POSIX path), or
    ``None`` when it is not under ``old_root`` or its remainder is not a plain relative path.

    A Windows ``old_root`` matches as Windows does: either separator, case-insensitive; the
    remainder's components are joined with ``/``. A POSIX ``old_root`` matches byte for
    byte and the remainder is kept as it is (backslashes included)."""
    new_root = new_root.rstrip("/") or "/"
    if is_windows_path(old_root):
        if not is_windows_path(locator):
            return None
        old_parts, parts = windows_parts(old_root), windows_parts(locator)
        n = len(old_parts)
        if len(parts) < n or [p.casefold() for p in parts[:n]] != [p.casefold() for p in old_parts]:
            return None
        rest = parts[n:]
        if any(p in (".", "..") or ":" in p for p in rest):
            return None
        return "/".join([new_root.rstrip("/")] + rest) if rest else new_root
    old = old_root.rstrip("/")
    if locator == old or locator == old_root:
        return new_root
    if not locator.startswith(old + "/"):
        return None
    return new_root.rstrip("/") + locator[len(old) :]
