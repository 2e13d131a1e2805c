"""Watching a live spill root: change events that always agree with the disk.

watchfiles only says *something* changed at a path; :class:`RootState` turns each
batch into ``added``/``modified``/``deleted`` events by re-``lstat``-ing the paths
against what it last saw, so coalesced or reordered notifications still end in a
state that matches the disk. A root that disappears emits ``deleted`` for everything
it held and a ``root-missing`` event; when it is recreated it is rescanned and
followed again.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from dataclasses import dataclass
from typing import AsyncIterator, Iterable, Iterator, Literal

import watchfiles

from .scan import SESSION_DIR, ArtifactKind, classify_name

EventKind = Literal["added", "modified", "deleted", "root-missing", "root-restored"]


@dataclass(frozen=True)
class ChangeEvent:
    event: EventKind
    path: str
    session: str | None
    kind: ArtifactKind | None

    def to_json(self) -> dict[str, object]:
        return {"event": self.event, "path": self.path, "session": self.session, "kind": self.kind}


class RootState:
    """The artifacts under a root as last seen: path → (size, mtime_ns)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.files: dict[str, tuple[int, int]] = {}

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

    def rescan(self) -> list[ChangeEvent]:
        """Compare the whole tree with the state (start-up, root recreated, overflow)."""
        seen: dict[str, tuple[int, int]] = {}
        try:
            with os.scandir(self.root) as top:
                entries = [e for e in top if SESSION_DIR.match(e.name)]
        except OSError:
            entries = []
        dirs = [e.path for e in entries if e.is_dir(follow_symlinks=False)]
        for e in entries:
            if e.is_symlink():  # named like a session dir: reported, never followed
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                seen[e.path] = (st.st_size, st.st_mtime_ns)
        for d in dirs:
            try:
                with os.scandir(d) as it:
                    for e in it:
                        try:
                            st = e.stat(follow_symlinks=False)
                        except OSError:
                            continue
                        seen[e.path] = (st.st_size, st.st_mtime_ns)
            except OSError:
                continue
        return self._apply(seen, full=True)

    def update(self, paths: Iterable[str]) -> list[ChangeEvent]:
        """Re-stat the given paths (and, for a session dir, its children)."""
        seen: dict[str, tuple[int, int] | None] = {}
        for path in paths:
            rel = os.path.relpath(path, self.root)
            parts = rel.split(os.sep)
            if len(parts) == 1 and SESSION_DIR.match(parts[0]):
                # A whole session dir appeared or vanished: settle its children.
                prefix = path + os.sep
                for known in [p for p in self.files if p.startswith(prefix)]:
                    seen.setdefault(known, None)
                if os.path.islink(path):
                    seen[path] = None  # named like a session dir: reported, never followed
                    continue
                try:
                    with os.scandir(path) as it:
                        for e in it:
                            seen[e.path] = None
                except OSError:
                    pass
            elif self._relevant(path) is not None:
                seen[path] = None
        result: dict[str, tuple[int, int]] = {}
        gone: list[str] = []
        for path in seen:
            try:
                st = os.lstat(path)
            except OSError:
                gone.append(path)
                continue
            if stat.S_ISDIR(st.st_mode):
                continue
            result[path] = (st.st_size, st.st_mtime_ns)
        return self._apply(result, full=False, gone=gone)

    def _apply(self, seen: dict[str, tuple[int, int]], *, full: bool, gone: Iterable[str] = ()) -> list[ChangeEvent]:
        events: list[ChangeEvent] = []
        for path, sig in sorted(seen.items()):
            old = self.files.get(path)
            if old is None:
                events.append(self._event("added", path))
            elif old != sig:
                events.append(self._event("modified", path))
            self.files[path] = sig
        removed = [p for p in self.files if p not in seen] if full else [p for p in gone if p in self.files]
        for path in sorted(removed):
            del self.files[path]
            events.append(self._event("deleted", path))
        return events

    def clear(self) -> list[ChangeEvent]:
        events = [self._event("deleted", p) for p in sorted(self.files)]
        self.files.clear()
        return events


def _root_id(root: str) -> tuple[int, int] | None:
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _session_dirs(root: str) -> list[str]:
    """The root's session dirs, in name order; symlinks are not dirs here."""
    try:
        with os.scandir(root) as top:
            return sorted(e.path for e in top if SESSION_DIR.match(e.name) and e.is_dir(follow_symlinks=False))
    except OSError:
        return []


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
    stop = stop or threading.Event()
    state = RootState(os.fspath(root))
    first = state.rescan()
    fresh: list[str] = []  # session dirs the next watch must settle once it is running
    if initial and first:
        yield first
    while not stop.is_set():
        ident = _root_id(state.root)
        if ident is None:
            gone = state.clear()
            yield gone + [ChangeEvent("root-missing", state.root, None, None)]
            while not stop.is_set() and _root_id(state.root) is None:
                stop.wait(tick_ms / 1000)
            if stop.is_set():
                return
            yield [ChangeEvent("root-restored", state.root, None, None)] + state.rescan()
            continue
        # The root and each session dir, each watched alone: a recursive OS watch follows
        # symlinks, so one named like an artifact and pointing at the root's parent sent
        # it walking outside the root (and no event came back). A new or vanished
        # session dir restarts the watch with the new list.
        dirs = _session_dirs(state.root)
        regrown = False
        try:
            for changes in watchfiles.watch(
                state.root, *dirs, stop_event=stop, rust_timeout=tick_ms, yield_on_timeout=True,
                debounce=50, step=20, recursive=False, ignore_permission_denied=True,
            ):
                if _root_id(state.root) != ident:
                    break  # deleted (or replaced): settle it in the outer loop
                if fresh:
                    # Watching now: settle what was created in the dirs while it started.
                    changes = {(watchfiles.Change.added, d) for d in fresh} | set(changes)
                    fresh = []
                if not changes:
                    continue
                events = state.update({path for _, path in changes})
                if events:
                    yield events
                if any(os.path.dirname(path) == state.root for _, path in changes):
                    now = _session_dirs(state.root)
                    if now != dirs:
                        fresh, regrown = [d for d in now if d not in dirs], True
                        break
        except (OSError, RuntimeError):
            # The root vanished or changed under the OS watcher while it was starting:
            # settle it in the outer loop after a tick.
            stop.wait(tick_ms / 1000)
        if _root_id(state.root) == ident and not stop.is_set() and not regrown:
            # watchfiles ended without the root going away: resync and keep going.
            events = state.rescan()
            if events:
                yield events


async def awatch_root(root: str | os.PathLike[str], *, initial: bool = False) -> AsyncIterator[list[ChangeEvent]]:
    """The same as :func:`watch_root`, from a thread, for asyncio callers (TUI, notebook)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[list[ChangeEvent] | None] = asyncio.Queue()
    stop = threading.Event()

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
