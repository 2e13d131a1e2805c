"""The local backend's expiry sweep (FORMAT.md §2), shared by every place that applies it.

One rule, used by :class:`~spillscope.spill.local.LocalSpillStore`'s start-up sweep, by
``spillscope prune`` and by the inspector's ``past-retention`` forecast. It mirrors the
reference's ``cleanup.ts`` (``sweepSpillRoots``/``gatherSweepRoots``):

- a regular file expires when its mtime, as Node's ``Stats.mtimeMs``, is *strictly*
  less than the cutoff ``Date.now() - period`` (integer milliseconds): a file exactly at
  the boundary is kept;
- only entries directly inside ``session-<12 lowercase hex>`` directories of a root are
  considered; symlinks, nested directories and special files are never followed nor
  deleted (and keep their session dir from being pruned);
- a root, and each session dir, must be a real directory owned by the sweeping user and
  not writable by group or others (a root's ancestors too, unless sticky and the child
  is the user's); anything else is skipped with a warning;
- a session dir emptied by the sweep is removed; a root is removed only when it is a
  discovered prior default root (``dsh-spill-`` + 6 ``[A-Za-z0-9]``, directly in the
  temp dir) and nothing is left in it; the active root is never removed;
- every failure is contained: it becomes a warning and the sweep goes on.

Beyond the reference's path-based walk, every step here is relative to a directory
descriptor opened with ``O_NOFOLLOW`` and checked to be the very directory that was
vetted, so a directory swapped for a symlink mid-sweep is never entered. A file written
during the sweep survives: the backend never reuses a name (exclusive create, 48 random
bits), so a new file is either absent from the listing or fails the re-check of identity
and age made just before its ``unlink``, and a session dir or root that gained an entry is
not removable (``rmdir`` fails with ``ENOTEMPTY``, which is not an error).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

DEFAULT_ROOT_PREFIX = "dsh-spill-"
#: Node's ``mkdtemp`` shape: exactly six ``[A-Za-z0-9]`` after the prefix.
DEFAULT_ROOT_RE = re.compile(r"^dsh-spill-[A-Za-z0-9]{6}\Z")
SESSION_DIR_RE = re.compile(r"^session-[0-9a-f]{12}\Z")
MS_PER_DAY = 24 * 60 * 60 * 1000
DEFAULT_CLEANUP_PERIOD_DAYS = 30

WarnFn = Callable[[str], None]
#: ``keep(path) -> reason or None``: an expired file with a reason is kept (``prune --logs``).
KeepFn = Callable[[str], "str | None"]
Identity = tuple[int, int]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def now_ms() -> int:
    """``Date.now()``: whole milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def node_mtime_ms(mtime_ns: int) -> float:
    """Node's ``Stats.mtimeMs`` for an mtime in nanoseconds (``sec * 1e3 + nsec / 1e6``)."""
    sec, nsec = divmod(mtime_ns, 1_000_000_000)
    return float(sec * 1000) + nsec / 1e6


def cutoff_ms(period_ms: int, now: int | None = None) -> int:
    """The sweep's cutoff: ``now - period`` in whole milliseconds."""
    return (now_ms() if now is None else now) - period_ms


def is_expired(mtime_ns: int, cutoff: float) -> bool:
    """The expiry rule: the mtime is strictly older than the cutoff."""
    return node_mtime_ms(mtime_ns) < cutoff


def validate_period_days(days: object) -> int:
    """``cleanupPeriodDays``: a whole number of days, 0 or more (0 disables the sweep)."""
    if isinstance(days, bool) or not isinstance(days, (int, float)):
        raise TypeError(f"cleanup_period_days must be a number, not {type(days).__name__}")
    if days != days or days < 0 or days != int(days):
        raise ValueError(f"cleanup_period_days must be a whole number of days, 0 or more: {days!r}")
    return int(days)


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


@dataclass(frozen=True)
class ResolvedRoot:
    path: str
    identity: Identity


@dataclass(frozen=True)
class SweepRoot:
    """One root to sweep; ``prune_when_empty`` only for discovered prior default roots."""

    path: str
    prune_when_empty: bool


@dataclass(frozen=True)
class Removal:
    """A file, session dir or root the sweep removed (or, in a dry run, would remove)."""

    path: str
    kind: Literal["file", "session-dir", "root"]
    bytes: int = 0
    mtime_ns: int | None = None


@dataclass(frozen=True)
class Kept:
    """An expired file kept because ``keep`` gave a reason."""

    path: str
    bytes: int
    mtime_ns: int
    reason: str


@dataclass(frozen=True)
class Skipped:
    """An entry the sweep left alone without looking inside or at its age."""

    path: str
    reason: str


@dataclass
class SweepReport:
    cutoff_ms: int
    dry_run: bool
    removed: list[Removal] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    #: Failures (unreadable, undeletable): each was also passed to ``warn``.
    errors: list[str] = field(default_factory=list)

    @property
    def bytes_freed(self) -> int:
        return sum(r.bytes for r in self.removed)

    def files(self) -> list[Removal]:
        return [r for r in self.removed if r.kind == "file"]


def _safe_warn(warn: WarnFn, message: str) -> None:
    try:
        warn(message)
    except Exception:
        pass  # a warning sink is an observer: its failure must not stop the sweep


def resolve_root(path: str, allow_symlink: bool, warn: WarnFn, uid: int | None = None) -> ResolvedRoot | None:
    """The root's canonical path and identity, or ``None`` when absent or unsafe (warned).

    A configured root may itself be a symlink (``allow_symlink``); a discovered one may not."""
    uid = os.geteuid() if uid is None else uid
    try:
        initial = os.lstat(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            _safe_warn(warn, f"spill-local: failed to inspect root {path}: {exc}")
        return None
    if stat.S_ISLNK(initial.st_mode):
        if not allow_symlink:
            return None
    elif not is_trusted_dir(initial, uid):
        _safe_warn(warn, f"spill-local: skipped unsafe root {path}: expected a directory owned by the current user "
                         "and not writable by group or others")
        return None
    try:
        canonical = os.path.realpath(path, strict=True)
        st = os.lstat(canonical)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            _safe_warn(warn, f"spill-local: failed to resolve root {path}: {exc}")
        return None
    try:
        protected = has_protected_ancestors(canonical, uid)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            _safe_warn(warn, f"spill-local: failed to inspect ancestors of root {canonical}: {exc}")
        return None
    if not is_trusted_dir(st, uid) or not protected:
        _safe_warn(warn, f"spill-local: skipped unsafe root {canonical}: expected a current-user-owned directory "
                         "with protected write and ancestor permissions")
        return None
    return ResolvedRoot(canonical, (st.st_dev, st.st_ino))


def discover_default_roots(base: str, warn: WarnFn, uid: int | None = None) -> list[ResolvedRoot]:
    """Trusted prior default roots (``dsh-spill-XXXXXX``, real directories) directly in ``base``."""
    try:
        names = sorted(os.listdir(base))
    except OSError as exc:
        _safe_warn(warn, f"spill-local: failed to scan {base} for default roots: {exc}")
        return []
    found = []
    for name in names:
        if DEFAULT_ROOT_RE.match(name):
            resolved = resolve_root(os.path.join(base, name), False, warn, uid)
            if resolved is not None:
                found.append(resolved)
    return found


def gather_sweep_roots(active_roots: Sequence[str], warn: WarnFn, base: str, uid: int | None = None,
                       discovered: list[ResolvedRoot] | None = None) -> list[SweepRoot]:
    """Discovered default roots (prunable when emptied) plus the active roots, whose identity
    overrides a discovered alias as never prunable. ``discovered`` may be passed when the
    caller had to discover before deciding which roots are active."""
    if discovered is None:
        discovered = discover_default_roots(base, warn, uid)
    roots: dict[Identity, SweepRoot] = {r.identity: SweepRoot(r.path, True) for r in discovered}
    for path in active_roots:
        active = resolve_root(path, True, warn, uid)
        if active is not None:
            roots[active.identity] = SweepRoot(active.path, False)
    return list(roots.values())


def sweep_spill_roots(roots: list[SweepRoot], cutoff: int, warn: WarnFn, *, uid: int | None = None,
                      dry_run: bool = False, keep: KeepFn | None = None) -> SweepReport:
    """Delete expired files in every root's session dirs and prune what they leave empty.

    Never raises for a filesystem failure (each is warned and recorded in ``errors``).
    ``dry_run`` changes nothing and reports what would go; ``keep`` (prune's live-session
    exception) can spare an expired file, which then also keeps its session dir."""
    uid = os.geteuid() if uid is None else uid
    report = SweepReport(cutoff, dry_run)
    merged: dict[Identity, SweepRoot] = {}
    for candidate in roots:
        resolved = resolve_root(candidate.path, False, warn, uid)
        if resolved is None:
            continue
        existing = merged.get(resolved.identity)
        prune = (existing.prune_when_empty if existing else True) and candidate.prune_when_empty
        merged[resolved.identity] = SweepRoot(resolved.path, prune)
    for identity, root in merged.items():
        _sweep_root(root, identity, uid, report, warn, keep)
    return report


def _error(report: SweepReport, warn: WarnFn, message: str) -> None:
    report.errors.append(message)
    _safe_warn(warn, message)


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


def _sweep_root(root: SweepRoot, identity: Identity, uid: int, report: SweepReport, warn: WarnFn,
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
        _safe_warn(warn, f"spill-local: skipped unsafe session directory {path}")
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
