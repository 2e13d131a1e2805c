"""The local backend of the watch seam: :class:`LocalWatcher` follows a directory root.

Owns the watch loop for a root on this machine: the root is followed *by its path* (every
tick it is ``lstat``-ed: missing, a symlink or a file means ``root-missing``, another inode
means ``root-replaced``); watchfiles only makes changes show fast, while what is reported is
decided by :class:`~.state.RootState`; a burst too big to settle path by path, or a
failing OS watcher, means a full rescan, and while the OS watcher cannot run the root is
polled and a ``stale`` event says why until ``live`` says changes are followed again.
It is one backend beside :mod:`.s3`; :func:`.root.open_watcher` picks between them.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Generator, Iterator

from .events import ChangeEvent, Watcher, root_problem
from .state import RootState, _root_ident

if TYPE_CHECKING:
    from watchfiles import Change

__all__ = ["LocalWatcher"]

#: A watchfiles batch bigger than this is settled by a full rescan, not path by path.
_BURST = 2000


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
            self.went_round()
            why = root_problem(self.root)
            if why is not None:
                yield state.clear() + [ChangeEvent("root-missing", self.root, None, None, why)]
                self._said = "root missing"
                said = why
                while not stop.wait(self.tick):
                    self.went_round()
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

    def _open(self, paths: tuple[str, ...]) -> Generator[set[tuple[Change, str]], bool, None]:
        return _os_watch(paths, self.stop, int(self.tick * 1000))

    def _follow(self) -> Iterator[list[ChangeEvent]]:
        """Run the OS watcher on the current dirs, moved to the new set whenever session
        dirs come or go, until the root changes."""
        state, stop = self.state, self.stop
        paths = state.watch_paths()
        ident = state.ident
        watcher = self._open(paths)
        try:
            changes = next(watcher, None)
            if changes is None:
                return  # stopped
            # The OS watcher is up (its first, empty, batch says so at once): anything that
            # happened before it was is settled by a full listing, then changes are followed.
            events = state.sync()
            last_check = time.monotonic()
            check_gap = self.check_every
            while True:
                self.went_round()
                if root_problem(self.root) is not None or _root_ident(self.root) != ident:
                    if events:
                        yield events
                    return  # settled by batches()
                if len(changes) > _BURST:
                    events += state.sync()
                    last_check = time.monotonic()
                elif changes:
                    events += state.update({path for _, path in changes})
                if time.monotonic() - last_check >= check_gap:
                    began = time.monotonic()
                    events += state.check()
                    last_check = time.monotonic()
                    # Dirs that churn are re-listed at every check; with big churning dirs
                    # that was most of the thread's time. The net for lost notifications
                    # may come a little later then: at most a fifth of the time goes to it.
                    check_gap = max(self.check_every, 4 * (last_check - began))
                events += self._status(None)
                if events:
                    yield events
                events = []
                if stop.is_set():
                    return
                if state.watch_paths() != paths:
                    # Session dirs came or went (under churn, every second): a watcher on
                    # the new set is started, and the old one stops only once the new one
                    # is up, handing over what it saw meanwhile. No moment is unwatched, so
                    # only the dirs not followed until now are listed again, not the whole
                    # root (thousands of lstats, each waiting for the GIL in a busy app).
                    # The new one says at once when it is up, and the old one hands over
                    # what it saw without waiting out its grouping (each took a whole
                    # debounce before: ~150 ms without batches on every session dir renamed).
                    new_paths = state.watch_paths()
                    new = self._open(new_paths)
                    try:
                        first = next(new, None)
                        if first is None:
                            return  # stopped
                        try:
                            changes = first | watcher.send(True)
                        except StopIteration:
                            changes = first
                    except BaseException:
                        new.close()
                        raise
                    watcher.close()
                    watcher = new
                    events += state.sync(set(new_paths) - set(paths))
                    paths = new_paths
                    continue
                more = next(watcher, None)
                if more is None:
                    return  # stopped
                changes = more
        finally:
            watcher.close()


#: watchfiles' grouping, in ms: a batch is yielded once no change came for ``_STEP_MS``,
#: or at the latest ``_DEBOUNCE_MS`` after its first change (under endless churn). Both
#: are waits added to every change (a lone change waits about two steps, one in churn
#: up to debounce + two steps): 50/20 gave 40 ms idle and 61 ms under churn from raw
#: watchfiles; 25/10 halves that. Batches come up to twice as often under churn, which
#: costs little: each is handled path by path, and a caller that falls behind gets the
#: batches that queued up as one (issue 13, docs/benchmarks.md).
_DEBOUNCE_MS = 25
_STEP_MS = 10


def _os_watch(paths: tuple[str, ...], stop: threading.Event, timeout_ms: int) -> Generator[set[tuple[Change, str]], bool, None]:
    """``watchfiles.watch(*paths, recursive=False, ignore_permission_denied=True,
    yield_on_timeout=True)`` with the same grouping, filter and environment settings, and
    two differences a watcher being replaced needs: an empty batch as soon as the OS
    watcher is up (watchfiles says nothing until its first batch or timeout), and
    ``send(True)`` takes what it has seen so far at once, without the grouping."""
    import watchfiles
    from watchfiles import Change
    from watchfiles import main as wf
    from watchfiles._rust_notify import RustNotify

    try:  # its own defaults from the environment (WATCHFILES_* variables, polling on WSL)
        debug, polling, delay = wf._default_debug(None), wf._default_force_polling(None), wf._default_poll_delay_ms(300)
    except AttributeError:  # a watchfiles without them
        debug, polling, delay = False, False, 300
    keep = watchfiles.DefaultFilter()
    with RustNotify(list(paths), debug, polling, delay, False, True) as notify:
        now = yield set()
        while True:
            raw = notify.watch(1, 1, 1, stop) if now else notify.watch(_DEBOUNCE_MS, _STEP_MS, timeout_ms, stop)
            if raw == "stop":
                return
            if raw == "signal":
                raise KeyboardInterrupt
            changes: set[tuple[Change, str]] = set()
            if not isinstance(raw, str):
                for code, path in raw:
                    change = Change(code)
                    if keep(change, path):
                        changes.add((change, path))
            now = yield changes
