"""Locator resolution: where a notice's locator points under the inspected root, or why it cannot.

The store decides what a locator under it looks like (a normalised absolute path under a
directory, an ``s3://bucket/key`` under a bucket prefix: :meth:`~spillscope.storage.Storage.resolve`);
this module adds what is the same for every store: a NUL is refused, ``--rebase`` maps a
root copied from elsewhere, a Windows path is named as one, and a locator outside the root
gets the ``--rebase`` that would bring it in. It is separate because the linkers, the
digest planner and coverage all resolve locators the same way, and none of them needs the
rest of a verify pass to do it.
"""

from __future__ import annotations

import shlex

from ...storage import Storage, open_storage
from ...storage.local import OUTSIDE
from ...formats.locators import is_windows_path, rebase_locator, spill_root_of


def resolve_locator(locator: str, root: Storage | str, rebase: str | None = None) -> tuple[str | None, str]:
    """(the artifact's path under root, "") or (None, why it is outside the root).

    ``rebase`` is the root the locators were written under (POSIX, or Windows such as
    ``C:\\Users\\me\\AppData\\Local\\Temp\\dsh-spill-AbC123``): locators under it map onto ``root``."""
    store = open_storage(root)
    if "\x00" in locator:
        return None, "locator contains NUL"
    if rebase:
        moved = rebase_locator(locator, rebase, store.root)
        if moved is not None:
            locator = moved
    if is_windows_path(locator) and store.tree is not None:
        return None, "locator is a Windows path" + _rebase_hint(locator)
    path, why = store.resolve(locator)
    if path is None and why == OUTSIDE and not rebase:
        why += _rebase_hint(locator)
    return path, why


def _rebase_hint(locator: str) -> str:
    old = spill_root_of(locator)
    return f"; if this root is a copy of {old}, pass --rebase {shlex.quote(old)}" if old else ""
