"""Watching a live spill root: change events that always agree with the disk.

The root is followed *by its path*, whatever happens to the directory behind it:
created, removed, recreated, renamed away, replaced by a rename of another directory
onto the path, replaced by a symlink or a file (reported as ``root-missing``, never
followed), made unreadable. Events from the OS watcher (watchfiles) only make changes
show fast; what the watcher reports is decided by :class:`RootState`, which re-``lstat``s
and re-lists against what it last saw, so coalesced, reordered, overflowed or lost
notifications still end in a state that matches the disk:

* every tick the root path is ``lstat``-ed: another inode there means the root was
  replaced (``root-replaced``, then ``deleted``/``added`` for the difference); a missing
  path, a symlink or a file means ``deleted`` for everything held, then ``root-missing``;
* a cheap consistency check (``lstat`` of the root and each session dir: inode, mode,
  mtime) re-lists any directory that changed since it was last listed, or that changed
  so recently that a change in the same timestamp tick could hide behind it;
* a burst too big to settle path by path, or a failing OS watcher, means a full rescan;
  while the OS watcher cannot run, the root is polled and a ``stale`` event says why,
  until ``live`` says changes are followed again.

:class:`Watcher` is the seam: :class:`LocalWatcher` follows a directory; a backend for
another kind of root (an object store) implements :meth:`Watcher.batches` the same way.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Iterable, Iterator, Literal

from .scan import SESSION_DIR, ArtifactKind, classify_name

EventKind = Literal["added", "modified", "deleted", "root-missing", "root-restored", "root-replaced", "stale", "live"]
#: Events about the watch itself rather than one artifact.
STATUS_EVENTS = frozenset({"root-missing", "root-restored", "root-replaced", "stale", "live"})

#: A directory whose mtime is this close to (or after) the moment it was listed is
#: listed again at the next check: a change in the same timestamp tick leaves mtime equal.
_RACY_NS = 100_000_000
#: A watchfiles batch bigger than this is settled by a full rescan, not path by path.
_BURST = 2000


@dataclass(frozen=True)
class ChangeEvent:
    event: EventKind
    path: str
    session: str | None
    kind: ArtifactKind | None
    #: Why, for ``root-missing`` / ``root-replaced`` / ``stale`` (``None`` otherwise).
    detail: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"event": self.event, "path": self.path, "session": self.session, "kind": self.kind}
        if self.detail is not None:
            out["detail"] = self.detail
        return out


def root_problem(root: str) -> str | None:
    """Why the path cannot be followed as a root (``None``: it is a directory)."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return "does not exist"
    except NotADirectoryError:
        return "a parent is not a directory"
    except OSError as exc:
        return f"cannot be looked up: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink (not followed)"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    return None


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


class Watcher(ABC):
    """Follows one root until ``stop`` is set, as batches of :class:`ChangeEvent`.

    A batch holds artifact events and the watch's own status events: ``live`` once
    changes are followed, ``stale`` (with ``detail``) while they may not be,
    ``root-missing`` / ``root-restored`` / ``root-replaced``."""

    def __init__(self, root: str, *, stop: threading.Event | None = None, tick_ms: int = 100,
                 initial: bool = False) -> None:
        self.root = root
        self.stop = stop or threading.Event()
        self.tick = tick_ms / 1000
        self.initial = initial

    @abstractmethod
    def batches(self) -> Iterator[list[ChangeEvent]]:
        """Blocking: yield batches until ``stop`` is set."""


class LocalWatcher(Watcher):
    """A directory on this machine, through watchfiles plus the consistency check."""

    #: Seconds between consistency checks while the OS watcher runs.
    check_every = 0.25
    #: Seconds between full rescans while it cannot run (a big root costs a rescan).
    poll_every = 0.5

    def __init__(self, root: str, **kwargs: object) -> None:
        super().__init__(os.path.abspath(root), **kwargs)  # type: ignore[arg-type]
        self.state = RootState(self.root)
        self._said: str | None = "starting"  # the status last reported: None = live

    def _status(self, reason: str | None) -> list[ChangeEvent]:
        """``live`` / ``stale`` when the status changes (a problem listing a dir counts)."""
        if reason is None and self.state.problems:
            reason = next(iter(sorted(self.state.problems.values())))
        if reason == self._said:
            return []
        self._said = reason
        return [ChangeEvent("live" if reason is None else "stale", self.root, None, None, reason)]

    def batches(self) -> Iterator[list[ChangeEvent]]:
        state, stop = self.state, self.stop
        why = root_problem(self.root)
        first = state.sync() if why is None else []
        if self.initial and first:
            yield first
        backend_error: str | None = None
        retry_at = 0.0
        backoff = 0.5
        while not stop.is_set():
            why = root_problem(self.root)
            if why is not None:
                yield state.clear() + [ChangeEvent("root-missing", self.root, None, None, why)]
                self._said = "root missing"
                said = why
                while not stop.wait(self.tick):
                    why = root_problem(self.root)
                    if why is None:
                        break
                    if why != said:
                        said = why
                        yield [ChangeEvent("root-missing", self.root, None, None, why)]
                if stop.is_set():
                    return
                yield [ChangeEvent("root-restored", self.root, None, None)] + state.sync()
                continue
            if state.ident != _root_ident(self.root):
                events = state.sync()
                yield [ChangeEvent("root-replaced", self.root, None, None, "another directory is at the path now")] + events
            if backend_error is not None and time.monotonic() < retry_at:
                # The OS watcher failed: poll (a full rescan a tick) until it can be retried.
                events = state.sync() + self._status(backend_error)
                if events:
                    yield events
                stop.wait(max(self.tick, self.poll_every))
                continue
            try:
                yield from self._follow()
                backend_error = None
                backoff = 0.5
            except Exception as exc:  # watchfiles/notify failing: watch limits, vanished dirs…
                if stop.is_set():
                    return
                if root_problem(self.root) is not None or state.ident != _root_ident(self.root):
                    continue  # the root went away under the watcher: handled above
                paths = state.watch_paths()
                events = state.sync()
                if events:
                    yield events
                if state.watch_paths() != paths:
                    continue  # a session dir came or went while the OS watcher started on it
                backend_error = f"the file watcher failed ({type(exc).__name__}: {exc}); polling"
                retry_at = time.monotonic() + backoff
                backoff = min(backoff * 2, 10.0)

    def _follow(self) -> Iterator[list[ChangeEvent]]:
        """Run the OS watcher on the current dirs until the root or the dir set changes."""
        import watchfiles  # only a watch needs it (the CLI imports lazily)

        state, stop = self.state, self.stop
        paths = state.watch_paths()
        ident = state.ident
        started = False
        last_check = 0.0
        for changes in watchfiles.watch(
            *paths, stop_event=stop, rust_timeout=int(self.tick * 1000), yield_on_timeout=True,
            debounce=50, step=20, recursive=False, ignore_permission_denied=True,
        ):
            events: list[ChangeEvent] = []
            if not started:
                # The OS watcher is up: anything that happened before it was is settled
                # by a full listing, then changes are followed.
                started = True
                events += state.sync()
                last_check = time.monotonic()
            if root_problem(self.root) is not None or _root_ident(self.root) != ident:
                if events:
                    yield events
                return  # settled by batches()
            if len(changes) > _BURST:
                events += state.sync()
                last_check = time.monotonic()
            elif changes:
                events += state.update({path for _, path in changes})
            if time.monotonic() - last_check >= self.check_every:
                events += state.check()
                last_check = time.monotonic()
            events += self._status(None)
            if events:
                yield events
            if state.watch_paths() != paths:
                return  # session dirs came or went: watch the new set
            if stop.is_set():
                return


def open_watcher(root: str | os.PathLike[str], *, stop: threading.Event | None = None, tick_ms: int = 100,
                 initial: bool = False) -> Watcher:
    """The watcher for a root: a local directory, or ``s3://bucket/prefix`` (polled)."""
    if isinstance(root, str) and root.startswith("s3://"):
        from .s3watch import S3Watcher  # no OS watcher for a bucket; boto3 only when asked

        return S3Watcher(root, stop=stop, tick_ms=tick_ms, initial=initial)
    return LocalWatcher(os.fspath(root), stop=stop, tick_ms=tick_ms, initial=initial)


def watch_root(
    root: str | os.PathLike[str],
    *,
    stop: threading.Event | None = None,
    tick_ms: int = 100,
    initial: bool = False,
) -> Iterator[list[ChangeEvent]]:
    """Blocking: yield batches of change events until ``stop`` is set.

    With ``initial`` the first batch lists every existing artifact as ``added``.
    """
    return open_watcher(root, stop=stop, tick_ms=tick_ms, initial=initial).batches()


async def awatch_root(root: str | os.PathLike[str], *, initial: bool = False) -> AsyncIterator[list[ChangeEvent]]:
    """The same as :func:`watch_root`, from a thread, for asyncio callers (TUI, notebook).

    If the watching thread fails, a last ``stale`` event says so before the end."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[list[ChangeEvent] | None] = asyncio.Queue()
    stop = threading.Event()
    where = os.path.abspath(os.fspath(root))

    def deliver(item: list[ChangeEvent] | None) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
            return True
        except RuntimeError:  # the consumer's loop is closed: nobody is listening any more
            stop.set()
            return False

    def run() -> None:
        try:
            for batch in watch_root(root, stop=stop, initial=initial):
                if not deliver(batch):
                    return
        except Exception as exc:
            deliver([ChangeEvent("stale", where, None, None, f"the watch stopped ({type(exc).__name__}: {exc})")])
        finally:
            deliver(None)

    thread = threading.Thread(target=run, name="spillscope-watch", daemon=True)
    thread.start()
    try:
        while True:
            batch = await queue.get()
            if batch is None:
                return
            yield batch
    finally:
        stop.set()
