"""Whether a directory may be swept: ownership and permissions of a root, its ancestors and a session dir.

Separate from the walk because resolving a root (and its identity) is also what ``prune``
and the inspector's expiry forecast do before looking inside it.
"""

from __future__ import annotations

import errno
import os
import stat

from .sweep_records import ResolvedRoot, WarnFn, safe_warn


def is_trusted_dir(st: os.stat_result, uid: int) -> bool:
    """A real directory owned by ``uid`` that no other local user can add to or replace in."""
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and st.st_mode & 0o022 == 0


def has_protected_ancestors(path: str, uid: int) -> bool:
    """No ancestor lets another user replace the child below it: an ancestor writable by
    group/other is admitted only when sticky and the child on the way down is ``uid``'s."""
    child = path
    child_st = os.lstat(child)
    while True:
        parent = os.path.dirname(child)
        if parent == child:
            return True
        st = os.lstat(parent)
        if not stat.S_ISDIR(st.st_mode):
            return False
        writable = st.st_mode & 0o022 != 0
        if writable and not st.st_mode & stat.S_ISVTX:
            return False
        if writable and child_st.st_uid != uid:
            return False
        child, child_st = parent, st


def resolve_root(path: str, allow_symlink: bool, warn: WarnFn, uid: int | None = None) -> ResolvedRoot | None:
    """The root's canonical path and identity, or ``None`` when absent or unsafe (warned).

    A configured root may itself be a symlink (``allow_symlink``); a discovered one may not."""
    uid = os.geteuid() if uid is None else uid
    try:
        initial = os.lstat(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            safe_warn(warn, f"spill-local: failed to inspect root {path}: {exc}")
        return None
    if stat.S_ISLNK(initial.st_mode):
        if not allow_symlink:
            return None
    elif not is_trusted_dir(initial, uid):
        safe_warn(warn, f"spill-local: skipped unsafe root {path}: expected a directory owned by the current user "
                         "and not writable by group or others")
        return None
    try:
        canonical = os.path.realpath(path, strict=True)
        st = os.lstat(canonical)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            safe_warn(warn, f"spill-local: failed to resolve root {path}: {exc}")
        return None
    try:
        protected = has_protected_ancestors(canonical, uid)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            safe_warn(warn, f"spill-local: failed to inspect ancestors of root {canonical}: {exc}")
        return None
    if not is_trusted_dir(st, uid) or not protected:
        safe_warn(warn, f"spill-local: skipped unsafe root {canonical}: expected a current-user-owned directory "
                         "with protected write and ancestor permissions")
        return None
    return ResolvedRoot(canonical, (st.st_dev, st.st_ino))
