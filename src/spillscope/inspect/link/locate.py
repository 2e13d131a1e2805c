"""Locator resolution: where a notice's locator points under the inspected root, or why it cannot.

Local paths and ``s3://`` keys, with ``--rebase`` for a root copied from elsewhere. It is
separate because the linkers, the digest planner and coverage all resolve locators the same
way, and none of them needs the rest of a verify pass to do it.
"""

from __future__ import annotations

import os
import shlex

from ...util.fs import is_remote
from ...formats.locators import is_windows_path, rebase_locator, spill_root_of


def resolve_locator(locator: str, root: str, rebase: str | None = None) -> tuple[str | None, str]:
    """(absolute path under root, "") or (None, why it is outside the root).

    ``rebase`` is the root the locators were written under (POSIX, or Windows such as
    ``C:\\Users\\me\\AppData\\Local\\Temp\\dsh-spill-AbC123``): locators under it map onto ``root``."""
    if "\x00" in locator:
        return None, "locator contains NUL"
    if rebase:
        moved = rebase_locator(locator, rebase, root)
        if moved is not None:
            locator = moved
    if is_remote(root):
        return _resolve_remote(locator, root)
    if is_windows_path(locator):
        return None, "locator is a Windows path" + _rebase_hint(locator)
    if "://" in locator or locator.startswith(("file:", "s3:")):
        return None, "locator is a URI, not a local path"
    if not locator.startswith("/"):
        return None, "locator is not an absolute POSIX path"
    norm = os.path.normpath(locator)
    if norm != locator.rstrip("/") or ".." in locator.split("/"):
        return None, "locator is not a normalised path (has '..' or '.')"
    if not norm.startswith(root.rstrip("/") + "/"):
        return None, "locator is outside the inspected root" + ("" if rebase else _rebase_hint(locator))
    return norm, ""


def _rebase_hint(locator: str) -> str:
    old = spill_root_of(locator)
    return f"; if this root is a copy of {old}, pass --rebase {shlex.quote(old)}" if old else ""


def _resolve_remote(locator: str, root: str) -> tuple[str | None, str]:
    """An ``s3://bucket/key`` locator under an ``s3://`` root (keys are compared as they are)."""
    if not locator.startswith("s3://"):
        return None, "locator is not an s3:// URI (use --rebase OLD_ROOT for a root copied from elsewhere)"
    if any(part in ("", ".", "..") for part in locator[len("s3://"):].split("/")):
        return None, "locator is not a normalised key (has an empty, '.' or '..' segment)"
    if not locator.startswith(root.rstrip("/") + "/"):
        return None, "locator is outside the inspected root"
    return locator, ""
