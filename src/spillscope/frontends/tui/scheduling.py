"""Scan scheduling: the two-pass scan worker (names first, then the verification),
the settling of watch-triggered scans, and the coalescing of changes into passes.
Separate because it is the app's only path to a pass over the whole root, and its
rules (a change waits for a names pass or a verification, never starves the tree)
belong together."""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Callable

from textual import work
from textual.worker import get_current_worker

if TYPE_CHECKING:
    from textual.app import App

    from ...inspect.verify.inspection import Inspection
    from ...inspect.watch.events import ChangeEvent

    _AppBase = App[None]
else:
    _AppBase = object


class _Superseded(Exception):
    """Raised from the progress callback of a scan whose worker was cancelled."""


class ScanScheduling(_AppBase):
    """Mixin for :class:`~.app.SpillscopeApp`: runs and schedules the scans."""

    #: Seconds a watch-triggered scan waits (cancellable) before its verification pass.
    verify_settle = 0.3
    #: …but changes that never pause wait at most this long for one (seconds).
    verify_max_wait = 2.0

    if TYPE_CHECKING:  # the app's state and methods this part uses (SpillscopeApp sets and defines them)
        live_patch: bool
        inspection: Inspection | None
        verified: bool
        _rescan_scheduled: bool
        _quick_running: object | None
        _rescan_again: bool
        _phase: str | None
        _unverified_since: float | None
        _seq: int
        _recent: deque[tuple[int, list[ChangeEvent]]]

        def _inspect(self, check_content: bool, progress: Callable[[str, int, int | None], None]) -> Inspection: ...
        def show_verify_progress(self, share: float) -> None: ...
        def show_inspection(self, ins: Inspection, verified: bool = True, from_watch: bool = False,
                            start: int | None = None, sessions: set[str] | None = None,
                            paths: set[str] | None = None) -> None: ...

    @work(thread=True, exclusive=True, group="scan")
    def rescan(self, from_watch: bool = False) -> None:
        """Two passes: names and metadata first (fast, so changes show at once), then
        the full verification that reads every artifact."""
        worker = get_current_worker()
        last = 0.0

        def progress(phase: str, done: int, total: int | None) -> None:
            # A superseded pass stops here instead of reading a big root to the end.
            nonlocal last
            if worker.is_cancelled:
                raise _Superseded
            now = time.monotonic()
            if phase == "verify" and total and now - last > 0.2:
                last = now
                self.call_from_thread(self.show_verify_progress, done / total)

        # With the tree already patched from the events, a watch's change needs no names
        # pass over the whole root: only the verification, once the changes pause.
        patched = from_watch and self.live_patch and self.inspection is not None
        try:
            if not patched:
                self._quick_running = worker
                self._phase = "quick"
                try:
                    start = self.call_from_thread(self._mark)
                    quick = self._inspect(False, progress)
                except BaseException:
                    if self._quick_running is worker:
                        self._quick_running = None
                    raise
                if worker.is_cancelled:
                    if self._quick_running is worker:
                        self._quick_running = None
                        self.call_from_thread(self._rescan_if_asked)
                    return
                # Until it is shown, a change waits for this pass instead of cancelling it.
                self.call_from_thread(self.show_quick, worker, quick, from_watch, start)
            if from_watch:
                # Changes often come in runs: verify once they pause, not after each.
                self._phase = "settle"
                end = time.monotonic() + self.verify_settle
                while time.monotonic() < end:
                    if worker.is_cancelled:
                        return
                    time.sleep(0.02)
            if worker.is_cancelled:
                return
            # From here a change does not cancel the pass (under endless churn nothing
            # would ever be verified): it asks for another one after it.
            self._phase = "full"
            start = self.call_from_thread(self._mark)
            full = self._inspect(True, progress)
        except _Superseded:
            return
        finally:
            if not worker.is_cancelled:
                self._phase = None
        if not worker.is_cancelled:
            self.call_from_thread(self.show_inspection, full, True, from_watch, start)
            self.call_from_thread(self._rescan_if_asked)

    def _mark(self) -> int:
        """The last batch applied so far (a pass starting now sees at least those)."""
        return self._seq

    def show_quick(self, worker: object, ins: Inspection, from_watch: bool, start: int | None = None) -> None:
        if self._quick_running is worker:
            self._quick_running = None
        # A change that waited starts its pass first, so that pass runs while this
        # one is drawn (it supersedes this pass's verification).
        self._rescan_if_asked()
        self.show_inspection(ins, False, from_watch, start)

    def _rescan_if_asked(self) -> None:
        if self._rescan_again and self._phase != "full":
            self._rescan_again = False
            self.rescan(from_watch=True)

    def schedule_rescan(self) -> None:
        # Coalesce bursts: a change waits for a running names pass or verification
        # (then one more follows), and batches handled in one loop turn share one scan.
        if not self._rescan_scheduled:
            self._rescan_scheduled = True
            self.call_later(self._do_rescan)

    def _do_rescan(self) -> None:
        self._rescan_scheduled = False
        waited = self._unverified_since is not None and time.monotonic() - self._unverified_since > self.verify_max_wait
        if self._quick_running is not None or self._phase == "full" or (self._phase == "settle" and waited):
            self._rescan_again = True
            return
        self.rescan(from_watch=True)


__all__ = ["ScanScheduling"]
