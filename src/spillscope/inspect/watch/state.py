"""The local backend's picture of a root, kept in agreement with the disk.

Owns :class:`RootState` — the artifacts under a directory root as last seen, the root's and
session dirs' signatures (inode, mode, mtime) as of their last listing, and the cheap
consistency check that re-lists whatever changed since — so that coalesced, reordered or lost
OS notifications still end in a state that matches the disk. It is separate from
:mod:`.local` because it never waits on the OS watcher: it only lists and ``lstat``-s.
"""

from __future__ import annotations

import os
import stat
import time
from typing import Callable, Iterable

from ..scan.tree import SESSION_DIR, classify_name
from .events import ChangeEvent, EventKind

__all__ = ["DirSig", "RootState"]

#: A directory whose mtime is this close to (or after) the moment it was listed is
#: listed again at the next check: a change in the same timestamp tick leaves mtime equal.
_RACY_NS = 100_000_000


def _root_ident(root: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


DirSig = tuple[int, int, int]  # inode, mode, mtime_ns


def _sig(st: os.stat_result) -> DirSig:
    return (st.st_ino, st.st_mode, st.st_mtime_ns)


class RootState:
    """The artifacts under a root as last seen (path → (size, mtime_ns)), and the
    root's and session dirs' signatures as of their last listing."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.files: dict[str, tuple[int, int]] = {}
        #: Directory (the root and each session dir) → (signature, listed at, ns).
        self.dirs: dict[str, tuple[DirSig, int]] = {}
        #: Directory → why it could not be listed (its last known files are kept).
        self.problems: dict[str, str] = {}
        self.ident: tuple[int, int] | None = None

    # Paths and events --------------------------------------------------------------
    def _relevant(self, path: str) -> tuple[str, str] | None:
        rel = os.path.relpath(path, self.root)
        parts = rel.split(os.sep)
        if len(parts) != 2 or SESSION_DIR.match(parts[0]) is None:
            return None
        return parts[0], parts[1]

    def _event(self, kind: EventKind, path: str) -> ChangeEvent:
        rel = self._relevant(path)
        session, name = rel if rel else (None, os.path.basename(path))
        return ChangeEvent(kind, path, session, classify_name(name)[1])

    def session_dirs(self) -> list[str]:
        return sorted(d for d in self.dirs if d != self.root)

    def watch_paths(self) -> tuple[str, ...]:
        """What the OS watcher watches (non-recursively: nothing below is followed)."""
        return (self.root, *self.session_dirs())

    # Listing -----------------------------------------------------------------------
    def _list(self, path: str, keep: Callable[[os.DirEntry[str]], bool]) -> list[os.DirEntry[str]] | None:
        """List a directory and remember its signature as of just before the listing.
        ``None``: it is gone (or no longer a directory); a problem is recorded if it
        exists but cannot be read."""
        started = time.time_ns()
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode):
                self.dirs.pop(path, None)
                self.problems.pop(path, None)
                return None
            with os.scandir(path) as it:
                entries = [e for e in it if keep(e)]
        except FileNotFoundError:
            self.dirs.pop(path, None)
            self.problems.pop(path, None)
            return None
        except OSError as exc:
            self.problems[path] = f"cannot read {path}: {exc.strerror or exc}"
            return None
        self.problems.pop(path, None)
        self.dirs[path] = (_sig(st), started)
        return entries

    def sync(self, only: Iterable[str] | None = None) -> list[ChangeEvent]:
        """List the root again, and the session dirs in ``only`` (every one when
        ``None``) plus any new one; report the difference with what was known."""
        self.ident = _root_ident(self.root)
        before = set(self.session_dirs())
        listed = self._list(self.root, lambda e: SESSION_DIR.match(e.name) is not None
                            and (e.is_dir(follow_symlinks=False) or e.is_symlink()))
        seen: dict[str, tuple[int, int]] = {}
        settled: set[str] = set()
        if listed is None and self.root in self.problems:
            current = before  # unreadable root: keep what we knew, list its dirs directly
        else:
            current = set()
            settled.add(self.root)
            for e in listed or ():
                if not e.is_symlink():
                    current.add(e.path)
                    continue
                try:  # named like a session dir: reported, never followed
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                seen[e.path] = (st.st_size, st.st_mtime_ns)
        for gone in before - current:
            self.dirs.pop(gone, None)
            self.problems.pop(gone, None)
        targets = set(current) if only is None else (set(only) & current) | (current - before)
        settled |= before - current
        for d in sorted(targets):
            entries = self._list(d, lambda e: True)
            if entries is None:
                if d not in self.problems:
                    settled.add(d)  # vanished between the two listings
                continue
            settled.add(d)
            for e in entries:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                seen[e.path] = (st.st_size, st.st_mtime_ns)
        return self._apply(seen, [p for p in self.files if os.path.dirname(p) in settled])

    def check(self) -> list[ChangeEvent]:
        """The cheap consistency check: re-list only what changed since its listing."""
        now = time.time_ns()
        dirty: set[str] = set()
        for d, (sig, listed) in list(self.dirs.items()):
            try:
                st = os.lstat(d)
            except OSError:
                dirty.add(d)
                continue
            if _sig(st) != sig or st.st_mtime_ns >= listed - _RACY_NS or st.st_mtime_ns > now:
                dirty.add(d)
        dirty |= set(self.problems)
        if not dirty:
            return []
        return self.sync(dirty)

    # Path-by-path ------------------------------------------------------------------
    def update(self, paths: Iterable[str]) -> list[ChangeEvent]:
        """Re-stat the given paths (and, for a session dir, settle it whole)."""
        seen: dict[str, tuple[int, int] | None] = {}
        dirs: set[str] = set()
        for path in paths:
            rel = os.path.relpath(path, self.root)
            parts = rel.split(os.sep)
            if len(parts) == 1 and SESSION_DIR.match(parts[0]):
                dirs.add(path)
            elif self._relevant(path) is not None:
                seen[path] = None
        events = self.sync(dirs) if dirs else []
        result: dict[str, tuple[int, int]] = {}
        gone: list[str] = []
        for path in seen:
            if os.path.dirname(path) not in self.dirs:
                continue  # its session dir is not followed (gone, or not a directory)
            try:
                st = os.lstat(path)
            except OSError:
                gone.append(path)
                continue
            result[path] = (st.st_size, st.st_mtime_ns)
        return events + self._apply(result, gone)

    def _apply(self, seen: dict[str, tuple[int, int]], candidates: Iterable[str]) -> list[ChangeEvent]:
        """``seen`` is what is there now; a known path among ``candidates`` not in it is deleted."""
        events: list[ChangeEvent] = []
        for path, sig in sorted(seen.items()):
            old = self.files.get(path)
            if old is None:
                events.append(self._event("added", path))
            elif old != sig:
                events.append(self._event("modified", path))
            self.files[path] = sig
        removed = {p for p in candidates if p not in seen and p in self.files}
        for path in sorted(removed):
            del self.files[path]
            events.append(self._event("deleted", path))
        return events

    def clear(self) -> list[ChangeEvent]:
        events = [self._event("deleted", p) for p in sorted(self.files)]
        self.files.clear()
        self.dirs.clear()
        self.problems.clear()
        self.ident = None
        return events
