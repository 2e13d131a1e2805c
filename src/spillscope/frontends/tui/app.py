"""The spillscope Textual app: browse a spill root, a reference beside its notice, the
transcript reader, and a live watch. It only calls the inspector core; I/O runs in
workers so the interface never waits on the disk.

This module is the app shell (compose, bindings, actions, the command palette, the
detail and the reader); the scan workers are in :mod:`.scheduling`, the live watch in
:mod:`.live`, the status line in :mod:`.status`, the opening of the reader in
:mod:`.opening`, combined here as mixins."""

from __future__ import annotations

import os
import time
from collections import deque
from typing import Any, Callable, Iterable

from rich.console import Group
from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Header, Input, Static
from textual.notifications import SeverityLevel

from ...inspect.verify.coverage import coverage, describe
from ...storage import Storage, open_storage
from ...util.text import visible
from ...inspect.findings import CODES
from ...inspect.watch.patch import apply_events, changed_sessions
from ...inspect.verify.inspection import Inspection, inspect_root
from ...inspect.watch.events import ChangeEvent
from ...formats.transcript.layout import DEFAULT_MAX_LINE_BYTES
from ...formats.limits import DEFAULT_MAX_LOG_LINE_BYTES
from .footer import FittingFooter
from .help import HelpScreen
from .live import LiveWatch
from .opening import ReaderOpening
from .panels import ReferencePanel, artifact_renderable, session_renderable, tool_spill_renderable
from .safe_text import safe
from .scheduling import ScanScheduling
from .status import StatusLine
from .tree import BrowseTree, NodeData


WELCOME = "Select a session, reference or artifact.\n\nEnter opens a transcript; ? shows every key."


class SpillscopeApp(ScanScheduling, LiveWatch, StatusLine, ReaderOpening, App[None]):
    CSS_PATH = ["spillscope.tcss", "screens.tcss"]  # screens.tcss: the reader, its prompts, the search: shared
    TITLE = "spillscope"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("f1", "help", "Help", show=False),
        # Escape in the filter box gives the keys back to the tree (the filter stays).
        Binding("escape", "leave_filter", show=False),
        # Priority: the app handles "/" as it reads it, so the keys typed right after it
        # ("/Research", fast or pasted) already go to the box (check_action lets "/" type
        # itself into any input).
        Binding("slash", "filter", "Filter", priority=True),
        Binding("s", "search_root", "Search"),
        # Short labels: with s, every browse key fits the footer at 80 columns.
        Binding("f", "cycle_code", "Findings"),
        Binding("p", "toggle_pause", "Pause"),
        Binding("r", "refresh", "Rescan"),
        Binding("enter", "open", "Open", show=False),
        Binding("t", "stats", "Stats", show=False),
        Binding("o", "cycle_order", "Order", show=False),
    ]
    #: Below 150 columns the reference's preview and notice stack (see the .tcss): side by
    #: side they need the notice's 42 columns plus a preview worth reading, beside the tree.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-medium"), (150, "-wide")]
    #: Watch events applied to the tree at once, path by path (see inspect.watch.patch);
    #: False: every change waits for a pass over the whole root, as before.
    live_patch = True
    #: A local root's watcher in a child process (inspect.watch.child); False: a thread here.
    watch_in_child = True
    paused: reactive[bool] = reactive(False)
    root_missing: reactive[bool] = reactive(False)

    def __init__(self, root: str, logs: str | None = None, *, rebase: str | None = None, watch: bool = True,
                 limits: dict[str, int] | None = None, export_dir: str | None = None) -> None:
        super().__init__()
        #: The export key writes only under this directory (None: anywhere but the root and logs;
        #: in a browser, None means a download: see export.py).
        self.export_dir = export_dir
        #: --max-line-bytes / --max-log-line-bytes (inspect_root's defaults when not given).
        self.limits = dict(limits or {})
        # A root given as a symlink is resolved once, here: the tree and the watch follow
        # that directory; a symlink put at its path later is reported, never followed.
        # An s3://bucket/prefix root is named as the inspector names it.
        self.storage: Storage = open_storage(root).following_link()
        self.root_path = self.storage.root
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
        yield FittingFooter()

    def on_mount(self) -> None:
        self.sub_title = visible(self.root_path, one_line=True)
        self.query_one(BrowseTree).focus()
        self.update_filter_state()
        self.rescan()
        if self.watch_enabled:
            self.watch_root()

    # Loading (the workers are in .scheduling) --------------------------------------
    # The one call into the core for a pass stays here: it is the app's, and
    # ``inspect_root`` is looked up in this module (tests stand in for it here).
    def _inspect(self, check_content: bool, progress: Callable[[str, int, int | None], None]) -> Inspection:
        limits = {"max_line_bytes": DEFAULT_MAX_LINE_BYTES, "max_log_line_bytes": DEFAULT_MAX_LOG_LINE_BYTES, **self.limits}
        self.passes += 1
        # The root path is never followed if it is a symlink now (it was resolved at start).
        return inspect_root(self.root_path, self.logs_path, rebase=self.rebase, check_content=check_content,
                            progress=progress, max_line_bytes=limits["max_line_bytes"],
                            max_log_line_bytes=limits["max_log_line_bytes"], follow_root=False)

    def show_inspection(self, ins: Inspection, verified: bool = True, from_watch: bool = False,
                        start: int | None = None, sessions: set[str] | None = None,
                        paths: set[str] | None = None) -> None:
        """Show ``ins``; ``sessions``: only these session dirs' nodes changed (a watch's
        patch), and ``paths``, if given, are the only artifacts in them that did (their
        nodes are patched one by one). Otherwise (a pass's result) the sessions that
        differ from the shown inspection are found by comparing the two: only they are
        redrawn, in place."""
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
        if sessions is None and self.inspection is not None:
            sessions, paths = changed_sessions(self.inspection, ins), None
        self.inspection = ins
        #: True once the shown inspection has read and checked every artifact.
        self.verified = verified
        self.verify_progress = None
        self.loads += 1
        self.root_missing = not ins.scan.exists
        try:
            tree = self.query_one(BrowseTree)
            if sessions is None or not tree.patch(ins, sessions, paths):
                tree.populate(ins, self.text_filter, self.code_filter)
            if self.query_one(ContentSwitcher).current == "welcome":
                welcome = self.query_one("#welcome", Static)
                if welcome.content != WELCOME:  # said once: an update lays the whole screen out again
                    welcome.update(WELCOME)
            else:
                self.refresh_detail()
            self.update_status()
        except NoMatches:
            if not self.closing():
                raise  # (while closing, a pass or the watch may still report: dropped)

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
            info.update(session_renderable(data.key, ins.session_ids.get(data.key), data.obj,
                                           self.query_one(BrowseTree).session_findings(data)))
        else:
            cov = coverage(ins)
            # What was not checked is said where the root is described: never a quiet "no findings".
            checked = [safe(line, "bold yellow" if cov.unchecked else "") for line in describe(cov)]
            info.update(Group(safe(f"spill root {ins.root}", "bold"), safe(f"logs {self.logs_path or '(none)'}"),
                              *checked, *[safe(f"{k}: {v}") for k, v in ins.summary().items()]))

    # Reader (opening it: .opening) -------------------------------------------------
    def action_open(self) -> None:
        node = self.query_one(BrowseTree).cursor_node
        if node is not None and node.data is not None:
            self.open_reader(node.data)

    # Filters and commands ----------------------------------------------------------
    def action_filter(self) -> None:
        # At once, not deferred as focus() is: keys typed right after "/" ("/Research",
        # fast or pasted) must land in the box, not run as keys ("s" opened search-all).
        self.screen.set_focus(self.query_one("#filter", Input))

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.text_filter = event.value
        if self.inspection is not None:
            self.query_one(BrowseTree).populate(self.inspection, self.text_filter, self.code_filter)
            # The cursor may stand on another item now (its line is kept, no highlight is
            # posted): the detail follows it once the tree has laid out its new lines.
            self.call_after_refresh(self.refresh_detail)

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
            self.call_after_refresh(self.refresh_detail)  # as in filter_changed

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

    def action_cycle_order(self) -> None:
        tree = self.query_one(BrowseTree)
        orders = ("name", "size", "age")
        self.set_order(orders[(orders.index(tree.order_by) + 1) % len(orders)])

    def set_order(self, order: str) -> None:
        """Order the tree's sessions and files by name, size (largest first) or age (oldest first)."""
        tree = self.query_one(BrowseTree)
        tree.order_by = order
        self.notify(f"tree ordered by {order}" + {"size": " (largest first)", "age": " (oldest first)"}.get(order, ""),
                    timeout=2)
        if self.inspection is not None:
            tree.populate(self.inspection, self.text_filter, self.code_filter)
            self.call_after_refresh(self.refresh_detail)  # as in filter_changed

    def action_stats(self) -> None:
        from .stats import StatsScreen

        if not isinstance(self.screen, StatsScreen):
            self.push_screen(StatsScreen(self.root_path, self.logs_path, self.rebase))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The browse's filters act on the browse: over search-all or the reader they would
        # change a tree nobody sees (and the footer would offer "/ Filter" where / searches).
        if action in ("filter", "cycle_code", "cycle_order", "stats") and len(self.screen_stack) > 1:
            return False
        if action == "filter" and isinstance(self.focused, Input):
            return False  # "/" is text there (a path in the filter box)
        if action == "leave_filter":  # Escape means something else anywhere else
            return isinstance(self.focused, Input) and self.focused.id == "filter"
        return True

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_leave_filter(self) -> None:
        self.query_one(BrowseTree).focus()

    def action_help_quit(self) -> None:
        """Ctrl+C: Textual's own says "Press [b]ctrl+q[/b]…", and every notification here
        is plain text (it would show the markup); said plainly."""
        self.notify("ctrl+q quits (q too, outside a text box)", title="Do you want to quit?")

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
        for order in ("size", "age", "name"):
            yield SystemCommand(f"Order the tree by {order}", "Sessions and their files: largest first, oldest first, "
                                "or by name", lambda o=order: self.set_order(o))
        yield SystemCommand("Stats: where the bytes are", "Totals, the next sweep, and charts by age, session and finding",
                            self.action_stats)
        yield SystemCommand("Help", "Keys and conventions", self.action_help)


__all__ = ["SpillscopeApp"]
