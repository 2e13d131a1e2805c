"""The spillscope Textual app: browse a spill root, a reference beside its notice, the
transcript reader, and a live watch. It only calls the inspector core; I/O runs in
workers so the interface never waits on the disk."""

from __future__ import annotations

import os
import time
from collections import deque
from typing import Any, Callable, Iterable

from rich.console import Group
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Header, Input, Static
from textual.notifications import SeverityLevel
from textual.worker import get_current_worker

from ..format import count
from ...inspect.coverage import coverage, describe
from ...util.fs import normalize_root
from ...util.text import visible
from ...inspect.findings import CODES
from ...inspect.links import ReferenceLink
from ...inspect.livepatch import apply_events
from ...inspect.verify import Inspection, inspect_root
from ...inspect.watch import awatch_root
from ...inspect.watch_events import ChangeEvent
from ...inspect.search import reference_seen_ranges
from ...reference.constants import DEFAULT_MAX_LINE_BYTES
from ...formats.sessionlog import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LOG_LINE_BYTES
from .document import open_document
from .help import HelpScreen
from .reader import ReaderScreen
from .widgets import BrowseTree, NodeData, ReferencePanel, artifact_renderable, safe, tool_spill_renderable


class _Superseded(Exception):
    """Raised from the progress callback of a scan whose worker was cancelled."""


class SpillscopeApp(App[None]):
    CSS_PATH = "spillscope.tcss"
    TITLE = "spillscope"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("slash", "filter", "Filter"),
        Binding("f", "cycle_code", "Finding filter"),
        Binding("p", "toggle_pause", "Pause watch"),
        Binding("r", "refresh", "Rescan"),
        Binding("s", "search_root", "Search all", show=False),
        Binding("enter", "open", "Open", show=False),
    ]
    #: Below 150 columns the reference's preview and notice stack (see the .tcss): side by
    #: side they need the notice's 42 columns plus a preview worth reading, beside the tree.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (150, "-wide")]
    #: Seconds a watch-triggered scan waits (cancellable) before its verification pass.
    verify_settle = 0.3
    #: …but changes that never pause wait at most this long for one (seconds).
    verify_max_wait = 2.0
    #: Watch events applied to the tree at once, path by path (see inspect.livepatch);
    #: False: every change waits for a pass over the whole root, as before.
    live_patch = True
    paused: reactive[bool] = reactive(False)
    root_missing: reactive[bool] = reactive(False)

    def __init__(self, root: str, logs: str | None = None, *, rebase: str | None = None, watch: bool = True,
                 limits: dict[str, int] | None = None) -> None:
        super().__init__()
        #: --max-line-bytes / --max-log-line-bytes (inspect_root's defaults when not given).
        self.limits = dict(limits or {})
        # A root given as a symlink is resolved once, here: the tree and the watch follow
        # that directory; a symlink put at its path later is reported, never followed.
        # An s3://bucket/prefix root is named as the inspector names it.
        self.root_path = normalize_root(os.path.realpath(root) if os.path.islink(root) else root)
        self.logs_path = os.path.abspath(logs) if logs else None
        self.rebase = rebase
        self.watch_enabled = watch
        self.inspection: Inspection | None = None
        self.verified = False
        #: Share of the transcript bytes the running verification has read (None: not known).
        self.verify_progress: float | None = None
        self.code_filter: str | None = None
        self.text_filter = ""
        self.pending_changes = 0
        self._rescan_scheduled = False
        #: A scan's first (names only) pass is running: a watch change waits for it
        #: rather than cancelling it, so a stream of changes cannot starve the tree.
        self._quick_running: object | None = None  # the worker whose names pass is running
        self._rescan_again = False
        #: What the running scan worker is doing: "settle", "quick", "full" (None: idle).
        self._phase: str | None = None
        #: When the tree first showed a change no verification has seen (monotonic).
        self._unverified_since: float | None = None
        #: Watch batches applied to the tree, numbered; a pass's result is brought up to
        #: date with those that came after it started (its view of the disk is older).
        self._seq = 0
        self._recent: deque[tuple[int, list[ChangeEvent]]] = deque()
        self._recent_events = 0
        self._dropped_seq = 0
        #: Passes over the whole root (names or full) started, and batches applied path by path.
        self.passes = 0
        self.patches = 0
        self.loads = 0
        #: What the watch is doing: "starting", "live", "stale", "missing" (see update_status).
        self.watch_state = "starting"
        self.watch_detail: str | None = None
        self.watch_since = ""

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Every notification is plain text (screens' too: they call this): ours quote
        untrusted names, labels and errors, which must never be read as markup."""
        super().notify(visible(message), title=visible(title), severity=severity, timeout=timeout, markup=False)

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Input(placeholder="filter: text…  (f: finding filter)", id="filter")
                yield Static(id="filter-state", markup=False)
                yield BrowseTree(id="tree")
            with ContentSwitcher(initial="welcome", id="detail"):
                yield Static("Loading…", id="welcome", markup=False)
                with VerticalScroll(id="info-pane"):
                    yield Static(id="info", markup=False)
                yield ReferencePanel(id="reference")
        yield Static(id="status", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = visible(self.root_path, one_line=True)
        self.query_one(BrowseTree).focus()
        self.update_filter_state()
        self.rescan()
        if self.watch_enabled:
            self.watch_root()

    # Loading -----------------------------------------------------------------------
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

    def _inspect(self, check_content: bool, progress: Callable[[str, int, int | None], None]) -> Inspection:
        limits = {"max_line_bytes": DEFAULT_MAX_LINE_BYTES, "max_log_line_bytes": DEFAULT_MAX_LOG_LINE_BYTES, **self.limits}
        self.passes += 1
        # The root path is never followed if it is a symlink now (it was resolved at start).
        return inspect_root(self.root_path, self.logs_path, rebase=self.rebase, check_content=check_content,
                            progress=progress, max_line_bytes=limits["max_line_bytes"],
                            max_log_line_bytes=limits["max_log_line_bytes"], follow_root=False)

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

    def show_verify_progress(self, share: float) -> None:
        if not self.verified:
            self.verify_progress = share
            self.update_status()

    def show_inspection(self, ins: Inspection, verified: bool = True, from_watch: bool = False,
                        start: int | None = None, sessions: set[str] | None = None) -> None:
        """Show ``ins``; ``sessions``: only these session dirs' nodes changed (a watch's
        patch), so only they are rebuilt when the tree can do it in place."""
        if from_watch and self.paused:
            # A watch-triggered scan that finishes after a pause waits for the resume.
            self.pending_changes += 1
            self.update_status()
            return
        if start is not None and self._seq > start:
            # Changes the tree showed while this pass ran: apply them again on top of it.
            if start < self._dropped_seq:
                self._rescan_again = True  # too many to replay: another pass follows
            ins, changed = apply_events(ins, [ev for seq, batch in self._recent if seq > start for ev in batch])
            if changed or start < self._dropped_seq:
                verified = False
                self._rescan_again = True
                self._unverified_since = time.monotonic()  # the next verification settles again
        if verified:
            self._unverified_since = None
        self.inspection = ins
        #: True once the shown inspection has read and checked every artifact.
        self.verified = verified
        self.verify_progress = None
        self.loads += 1
        self.root_missing = not ins.scan.exists
        tree = self.query_one(BrowseTree)
        if sessions is None or not tree.patch(ins, sessions):
            tree.populate(ins, self.text_filter, self.code_filter)
        if self.query_one(ContentSwitcher).current == "welcome":
            self.query_one("#welcome", Static).update(
                "Select a session, reference or artifact.\n\nEnter opens a transcript; ? shows every key.")
        else:
            self.refresh_detail()
        self.update_status()

    def update_status(self) -> None:
        ins = self.inspection
        # The watch's state first: a narrow terminal cuts the line's end.
        parts = [self.watch_status()] if self.watch_enabled else []
        if self.root_missing and not self.watch_enabled:
            parts.append("⚠ ROOT MISSING — r rescans")
        if ins is not None:
            summary = ins.summary()
            parts.append(f"{count(len(ins.scan.artifacts()), 'artifact')} · {count(len(ins.references), 'reference')} · "
                         + (", ".join(f"{k} {v}" for k, v in summary.items()) or "no findings")
                         + ("" if self.verified else " · verifying…"
                            + (f" {self.verify_progress:.0%}" if self.verify_progress is not None else "")))
        self.query_one("#status", Static).update("  ·  ".join(parts))

    def watch_status(self) -> str:
        """The watch's part of the status line: "● live" only while changes are followed,
        and always what ``r`` will do."""
        detail = f" ({self.watch_detail})" if self.watch_detail else ""
        if self.watch_state == "missing":
            text = f"⚠ ROOT MISSING since {self.watch_since}{detail}, waiting for it · r rescans now"
        elif self.watch_state == "stale":
            text = f"⚠ stale since {self.watch_since}{detail} · r rescans and restarts the watch"
        elif self.paused:
            return ("⏸ PAUSED" + (f" ({self.pending_changes} changes waiting)" if self.pending_changes else "")
                    + " · p resumes · r rescans now")
        elif self.watch_state == "starting":
            return "○ starting the watch… · r rescans"
        else:
            return "● live · r rescans"
        return text + (" · ⏸ PAUSED" if self.paused else "")

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
        try:
            async for batch in awatch_root(self.root_path):
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
        try:
            self.show_inspection(ins, False, sessions=self._changed_sessions(changed))
        except NoMatches:
            return  # the app is closing: its widgets are gone, and so is the need to show this

    def _changed_sessions(self, changed: set[str]) -> set[str] | None:
        """The session dirs whose artifacts changed; None if a session dir itself (or
        the root) came or went."""
        names: set[str] = set()
        for path in changed:
            parent = os.path.dirname(path)
            if parent != self.root_path and os.path.dirname(parent) == self.root_path:
                names.add(os.path.basename(parent))
            else:
                return None
        return names

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

    # Detail ------------------------------------------------------------------------
    @on(BrowseTree.NodeHighlighted)
    def highlighted(self, event: BrowseTree.NodeHighlighted[NodeData]) -> None:
        self.show_detail(event.node.data)

    @on(BrowseTree.NodeSelected)
    def selected(self, event: BrowseTree.NodeSelected[NodeData]) -> None:
        data = event.node.data
        if data is not None and data.kind in ("reference", "artifact", "tool-spill"):
            self.open_reader(data)

    def refresh_detail(self) -> None:
        node = self.query_one(BrowseTree).cursor_node
        self.show_detail(node.data if node else None)

    def show_detail(self, data: NodeData | None) -> None:
        switcher = self.query_one(ContentSwitcher)
        info = self.query_one("#info", Static)
        ins = self.inspection
        if data is None or ins is None:
            return
        if data.kind == "reference":
            switcher.current = "reference"
            self.query_one(ReferencePanel).show(data.obj)
            return
        switcher.current = "info-pane"
        if data.kind == "artifact":
            info.update(artifact_renderable(data.obj, ins.findings_for(data.key), ins.session_ids.get(data.obj.session_dir)))
        elif data.kind == "tool-spill":
            info.update(tool_spill_renderable(data.obj))
        elif data.kind == "session":
            group = data.obj
            sid = ins.session_ids.get(data.key)
            lines = [safe(f"session dir {data.key}\nsession id  {sid or '(no log names it)'}\n"),
                     safe(f"{count(len(group['dir'].artifacts) if group['dir'] else 0, 'artifact')}, "
                          f"{count(len(group['refs']), 'reference')}, {count(len(group['tools']), 'tool spill')}")]
            if group["dir"] is None:
                lines.append(safe("\nno session dir on disk (nothing was saved for it, or it was pruned)", "yellow"))
            info.update(Group(*lines))
        else:
            cov = coverage(ins)
            # What was not checked is said where the root is described: never a quiet "no findings".
            checked = [safe(line, "bold yellow" if cov.unchecked else "") for line in describe(cov)]
            info.update(Group(safe(f"spill root {ins.root}", "bold"), safe(f"logs {self.logs_path or '(none)'}"),
                              *checked, *[safe(f"{k}: {v}") for k, v in ins.summary().items()]))

    # Reader ------------------------------------------------------------------------
    def action_open(self) -> None:
        node = self.query_one(BrowseTree).cursor_node
        if node is not None and node.data is not None:
            self.open_reader(node.data)

    def open_reader(self, data: NodeData) -> None:
        ins = self.inspection
        if ins is None:
            return
        if data.kind == "reference":
            link: ReferenceLink = data.obj
            if link.artifact is None:
                self.notify("No artifact to open: " + {"expired": "the locator has expired (the artifact is gone)",
                                                        "unavailable": "the notice says no snapshot was saved",
                                                        "unverified": "the root or session dir cannot be read",
                                                        "intact": "nothing was omitted, so nothing was saved"}.get(link.status, link.status),
                            severity="warning")
                return
            art = link.artifact
        elif data.kind == "tool-spill":
            art = data.obj.artifact
            if art is None:
                self.notify("No artifact to open: " + ("the root or session dir cannot be read" if data.obj.status == "unverified"
                                                        else "the locator has expired"), severity="warning")
                return
        elif data.kind == "artifact":
            art = data.obj
        else:
            return
        if not art.is_regular or art.kind == "unknown":
            self.notify("This entry cannot be opened (not a regular artifact file)", severity="warning")
            return
        self.load_reader(art.path, art.kind, art.name)

    @work(thread=True, exclusive=True, group="open")
    def load_reader(self, path: str, kind: str, title: str) -> None:
        try:
            document = open_document(path, kind)
        except FileNotFoundError:
            # Deleted since the last scan: say so, and bring the tree up to date.
            self.call_from_thread(self.notify, f"{title} is gone: it was deleted from the spill root "
                                  "after the last scan (the tree is being refreshed)", severity="warning", timeout=8)
            self.call_from_thread(self.schedule_rescan)
            return
        except Exception as exc:  # a malformed or unreadable artifact shows its error, never crashes
            self.call_from_thread(self.notify, f"cannot open {title}: {exc}", severity="error", timeout=8)
            return
        forbidden = [p for p in (self.root_path, self.logs_path) if p]
        link = self.preview_link(path)
        # The reader opens at once; what the model saw needs a pass over the whole
        # transcript (seconds for a big one), so it follows from a worker.
        screen = ReaderScreen(document, title, None if link else {}, forbidden)
        self.call_from_thread(self.push_screen, screen)
        if link is not None:
            seen = self.seen_ranges(path, link)
            self.call_from_thread(screen.set_seen, seen)

    def preview_link(self, path: str) -> ReferenceLink | None:
        ins = self.inspection
        return next((l for l in (ins.references if ins else []) if l.artifact is not None and l.artifact.path == path
                     and l.recomputed), None)

    def seen_ranges(self, path: str, link: ReferenceLink) -> dict[int, list[tuple[int, int]] | None]:
        """Per transcript message, the byte ranges the model saw (from the linked preview);
        a message missing from the result was not linked to a preview."""
        conv = link.entry.preview.get("conversation") or []
        return reference_seen_ranges(path, conv, link.recomputed.sources if link.recomputed else ())

    # Filters and commands ----------------------------------------------------------
    def action_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.text_filter = event.value
        if self.inspection is not None:
            self.query_one(BrowseTree).populate(self.inspection, self.text_filter, self.code_filter)

    @on(Input.Submitted, "#filter")
    def filter_submitted(self) -> None:
        self.query_one(BrowseTree).focus()

    def action_cycle_code(self) -> None:
        present = sorted({f.code for f in self.inspection.findings}) if self.inspection else []
        cycle: list[str | None] = [None, *present]
        at = cycle.index(self.code_filter) if self.code_filter in cycle else 0
        self.set_code_filter(cycle[(at + 1) % len(cycle)])

    def set_code_filter(self, code: str | None) -> None:
        self.code_filter = code
        self.update_filter_state()
        if self.inspection is not None:
            self.query_one(BrowseTree).populate(self.inspection, self.text_filter, self.code_filter)

    def update_filter_state(self) -> None:
        self.query_one("#filter-state", Static).update(
            f"finding filter: {self.code_filter}" if self.code_filter else "finding filter: all (press f)")

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused and self.pending_changes:
            self.pending_changes = 0
            self.rescan()
        self.update_status()

    def action_refresh(self) -> None:
        self.rescan()
        if self.watch_enabled and self.watch_state == "stale":
            self.watch_root()  # exclusive: replaces a watch that failed or stopped

    def action_search_root(self) -> None:
        from .search import SearchScreen

        self.push_screen(SearchScreen(self.root_path, self.logs_path, self.rebase))

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def watch_root_missing(self) -> None:
        if self.is_running:
            self.update_status()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Pause / resume live watch", "Stop or restart applying changes", self.action_toggle_pause)
        yield SystemCommand("Rescan", "Scan the spill root and logs again", self.action_refresh)
        yield SystemCommand("Show all findings", "Clear the finding filter", lambda: self.set_code_filter(None))
        for code in CODES:
            yield SystemCommand(f"Filter: {code}", CODES[code][1], lambda c=code: self.set_code_filter(c))
        yield SystemCommand("Search the whole root", "Exact search of every transcript and tool output", self.action_search_root)
        yield SystemCommand("Help", "Keys and conventions", self.action_help)


__all__ = ["SpillscopeApp"]
