"""The sweep's walk: each root's session dirs and their expired files, deleted fd-relatively.

Every step is relative to a directory descriptor opened with ``O_NOFOLLOW`` and checked to
be the very directory that was vetted; separate from the entry points so the
descriptor-level care is in one place.
"""

from __future__ import annotations

import errno
import os
import re
import stat

from .expiry_rule import is_expired
from .sweep_records import Identity, KeepFn, Kept, Removal, Skipped, SweepReport, SweepRoot, WarnFn, safe_warn
from .trust import is_trusted_dir

SESSION_DIR_RE = re.compile(r"^session-[0-9a-f]{12}\Z")

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _error(report: SweepReport, warn: WarnFn, message: str) -> None:
    report.errors.append(message)
    safe_warn(warn, message)


def _open_vetted_dir(name: str, dir_fd: int | None, expected: os.stat_result) -> int | None:
    """Open a directory without following a symlink; ``None`` if it is no longer ``expected``."""
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (expected.st_dev, expected.st_ino) or st.st_uid != expected.st_uid \
            or st.st_mode != expected.st_mode:
        os.close(fd)
        return None
    return fd


def _lstat_at(dir_fd: int, name: str, path: str, report: SweepReport, warn: WarnFn) -> os.stat_result | bool:
    """The entry's own stat (never following it); ``True`` if it is gone, ``False`` if it
    could not be looked at (an error, reported)."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return True
        _error(report, warn, f"spill-local: failed to stat {path}: {exc}")
        return False


def sweep_root(root: SweepRoot, identity: Identity, uid: int, report: SweepReport, warn: WarnFn,
                keep: KeepFn | None) -> None:
    try:
        root_fd = os.open(root.path, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            _error(report, warn, f"spill-local: failed to read root {root.path}: {exc}")
        return
    try:
        st = os.fstat(root_fd)
        if (st.st_dev, st.st_ino) != identity or not is_trusted_dir(st, uid):
            report.skipped.append(Skipped(root.path, "root changed while the sweep started"))
            return
        try:
            names = sorted(os.listdir(root_fd))
        except OSError as exc:
            _error(report, warn, f"spill-local: failed to read root {root.path}: {exc}")
            return
        emptiable = True
        for name in names:
            if SESSION_DIR_RE.match(name) is None:
                emptiable = False  # not ours: left untouched, and it keeps the root
                continue
            if not _sweep_session_entry(root_fd, root.path, name, uid, report, warn, keep):
                emptiable = False
        if root.prune_when_empty and emptiable:
            if report.dry_run:
                report.removed.append(Removal(root.path, "root"))
                return
            try:
                os.rmdir(root.path)
                report.removed.append(Removal(root.path, "root"))
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
                    _error(report, warn, f"spill-local: failed to prune root {root.path}: {exc}")
    finally:
        os.close(root_fd)


def _sweep_session_entry(root_fd: int, root_path: str, name: str, uid: int, report: SweepReport,
                         warn: WarnFn, keep: KeepFn | None) -> bool:
    """Sweep one ``session-*`` entry of a root; ``True`` when it is gone afterwards."""
    path = os.path.join(root_path, name)
    st = _lstat_at(root_fd, name, path, report, warn)
    if isinstance(st, bool):
        return st
    if not is_trusted_dir(st, uid):
        why = ("a symlink (never followed)" if stat.S_ISLNK(st.st_mode)
               else "not a directory" if not stat.S_ISDIR(st.st_mode)
               else "owned by another user" if st.st_uid != uid else "writable by group or others")
        report.skipped.append(Skipped(path, why))
        safe_warn(warn, f"spill-local: skipped unsafe session directory {path}")
        return False
    try:
        dir_fd = _open_vetted_dir(name, root_fd, st)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return True
        _error(report, warn, f"spill-local: failed to read {path}: {exc}")
        return False
    if dir_fd is None:
        report.skipped.append(Skipped(path, "replaced while the sweep looked at it"))
        return False
    try:
        empty = _sweep_session_dir(dir_fd, path, report, warn, keep)
    finally:
        os.close(dir_fd)
    if not empty:
        return False
    if report.dry_run:
        report.removed.append(Removal(path, "session-dir"))
        return True
    try:
        os.rmdir(name, dir_fd=root_fd)
    except OSError as exc:
        # ENOTEMPTY: a writer added a file after the listing; it stays, and so does its dir.
        if exc.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
            _error(report, warn, f"spill-local: failed to prune {path}: {exc}")
        return False
    report.removed.append(Removal(path, "session-dir"))
    return True


def _sweep_session_dir(dir_fd: int, dir_path: str, report: SweepReport, warn: WarnFn,
                       keep: KeepFn | None) -> bool:
    """Delete the expired regular files of one session dir; ``True`` if nothing is left."""
    try:
        names = sorted(os.listdir(dir_fd))
    except OSError as exc:
        _error(report, warn, f"spill-local: failed to read {dir_path}: {exc}")
        return False
    remaining = len(names)
    for name in names:
        path = os.path.join(dir_path, name)
        st = _lstat_at(dir_fd, name, path, report, warn)
        if isinstance(st, bool):
            remaining -= st  # gone counts as removed; unreadable stays
            continue
        if not stat.S_ISREG(st.st_mode):
            # Only regular files expire: a symlink is neither followed nor deleted.
            report.skipped.append(Skipped(path, "a symlink (never followed)" if stat.S_ISLNK(st.st_mode)
                                          else "not a regular file"))
            continue
        if not is_expired(st.st_mtime_ns, report.cutoff_ms):
            continue
        reason = keep(path) if keep is not None else None
        if reason is not None:
            report.kept.append(Kept(path, st.st_size, st.st_mtime_ns, reason))
            continue
        if report.dry_run:
            report.removed.append(Removal(path, "file", st.st_size, st.st_mtime_ns))
            remaining -= 1
            continue
        if _unlink_if_unchanged(dir_fd, name, path, st, report, warn):
            remaining -= 1
    return remaining == 0


def _unlink_if_unchanged(dir_fd: int, name: str, path: str, seen: os.stat_result, report: SweepReport,
                         warn: WarnFn) -> bool:
    """Unlink ``name`` if it is still the expired file that was looked at; ``True`` if gone."""
    now = _lstat_at(dir_fd, name, path, report, warn)
    if isinstance(now, bool):
        return now
    if ((now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino) or not stat.S_ISREG(now.st_mode)
            or not is_expired(now.st_mtime_ns, report.cutoff_ms)):
        return False  # replaced or rewritten since: a live file, kept
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return True  # another sweep got there first: the goal holds, but it freed the bytes
        _error(report, warn, f"spill-local: failed to delete {path}: {exc}")
        return False
    report.removed.append(Removal(path, "file", now.st_size, now.st_mtime_ns))
    return True
