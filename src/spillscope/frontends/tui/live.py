"""The live watch: the watcher worker, its state ("starting", "live", "stale",
"missing"), and the patching of the tree from its events path by path. Separate
because it is the one part of the app driven by the disk rather than by the user."""

from __future__ import annotations

import os
import time
from collections import deque
from typing import TYPE_CHECKING

from textual import work
from textual.worker import get_current_worker

from ...inspect.watch.patch import apply_events
from ...inspect.watch.events import ChangeEvent
from ...inspect.watch.root import awatch_root
from ...inspect.watch.child import awatch_root_child

if TYPE_CHECKING:
    from textual.app import App
    from textual.reactive import reactive

    from ...inspect.verify.inspection import Inspection
    from ...storage import Storage

    _AppBase = App[None]
else:
    _AppBase = object


class LiveWatch(_AppBase):
    """Mixin for :class:`~.app.SpillscopeApp`: follows the root and patches the tree."""

    if TYPE_CHECKING:  # the app's state and methods this part uses (SpillscopeApp sets and defines them)
        paused: reactive[bool] = reactive(False)
        root_missing: reactive[bool] = reactive(False)
        root_path: str
        storage: Storage
        live_patch: bool
        watch_in_child: bool
        inspection: Inspection | None
        pending_changes: int
        patches: int
        _unverified_since: float | None
        _seq: int
        _recent: deque[tuple[int, list[ChangeEvent]]]
        _recent_events: int
        _dropped_seq: int
        watch_state: str
        watch_detail: str | None
        watch_since: str

        def update_status(self) -> None: ...
        def schedule_rescan(self) -> None: ...
        def show_inspection(self, ins: Inspection, verified: bool = True, from_watch: bool = False,
                            start: int | None = None, sessions: set[str] | None = None,
                            paths: set[str] | None = None) -> None: ...

    def set_watch_state(self, state: str, detail: str | None = None) -> None:
        if state != self.watch_state or detail != self.watch_detail:
            if state != self.watch_state:
                self.watch_since = time.strftime("%H:%M:%S")
            self.watch_state, self.watch_detail = state, detail
        self.root_missing = state == "missing"
        self.update_status()

    @work(exclusive=True, group="watch")
    async def watch_root(self) -> None:
        self.set_watch_state("starting")
        # A root given as a symlink was resolved at start (see __init__); a root
        # *replaced* by a symlink later is reported, not followed.
        # A local root's watcher runs in a child process: in this one it waited for the GIL
        # behind the interface and the verification (issue 13; docs/benchmarks.md).
        tree = self.storage.tree  # a directory is watched by the OS, in a child; a bucket is polled here
        batches = awatch_root_child(tree) if self.watch_in_child and tree is not None else awatch_root(self.storage)
        try:
            async for batch in batches:
                for ev in batch:
                    if ev.event == "live":
                        self.set_watch_state("live")
                    elif ev.event == "stale":
                        self.set_watch_state("stale", ev.detail)
                    elif ev.event == "root-missing":
                        self.set_watch_state("missing", ev.detail)
                    elif ev.event == "root-restored":
                        self.set_watch_state("starting")
                if self.paused:
                    self.pending_changes += len(batch)
                    self.update_status()
                    continue
                self.apply_watch_batch(batch)
                self.schedule_rescan()
        finally:
            await batches.aclose()  # its child process ends now, not when the generator is collected
            if not get_current_worker().is_cancelled and self.is_running and self.watch_state != "stale":
                self.set_watch_state("stale", "the watch stopped")

    def apply_watch_batch(self, batch: list[ChangeEvent]) -> None:
        """Show a batch's changes now, path by path; the verification follows later."""
        self._seq += 1
        self._recent.append((self._seq, batch))
        self._recent_events += len(batch)
        while self._recent_events > 50_000 and len(self._recent) > 1:
            seq, old = self._recent.popleft()
            self._recent_events -= len(old)
            self._dropped_seq = seq
        if not self.live_patch or self.inspection is None:
            return
        ins, changed = apply_events(self.inspection, batch)
        if not changed:
            return
        self.patches += 1
        if self._unverified_since is None:
            self._unverified_since = time.monotonic()
        self.show_inspection(ins, False, sessions=self._changed_sessions(changed), paths=changed)

    def _changed_sessions(self, changed: set[str]) -> set[str] | None:
        """The session dirs that changed, or whose artifacts did; None if the root did."""
        names: set[str] = set()
        root = self.root_path
        for path in changed:
            parent = os.path.dirname(path)
            if parent == root:
                names.add(os.path.basename(path))  # the session dir itself came or went
            elif os.path.dirname(parent) == root:
                names.add(os.path.basename(parent))
            else:
                return None
        return names


__all__ = ["LiveWatch"]
