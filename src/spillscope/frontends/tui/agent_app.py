"""The TUI on another agent's tree (Claude Code, qwen-code, Gemini CLI, OpenCode): each spill
file with its verdict, and its notice beside the file's own start; Enter reads the whole file
in dsh's reader (exact text, search, go-to, wrap, copy, export); ``s`` searches the whole tree.

A separate, small app because the dsh TUI (app.py) is built on dsh's scan, logs and transcript
reader; this one shows a :class:`spillscope.dialects.base.Report`, which every dialect returns.
The inspection runs in a worker thread; untrusted text goes through ``safe_text.safe``.

The tree is watched live (``dialects.watch.poll``, in a thread of its own): a change re-inspects
it, and the summary says "● live" only while the watch's rounds keep coming ("stale since" when
they stop, the thread ends or the tree is gone).
"""

from __future__ import annotations

import os
import threading
import time

from rich.cells import cell_len
from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from ...dialects.base import Dialect
from ...dialects.records import Link, Options, Report, SpillFile
from ...dialects.checks import read_spill
from ...dialects.watch import poll
from ...inspect.findings import SEVERITY_RANK, Finding
from ..format import count, human_size
from .help import HelpScreen, agent_help_renderable
from .labels import middle, one_line
from .safe_text import badges, safe

#: How much of a spill file is shown beside its notice (a notice's preview is at most ~2,000 characters).
HEAD_BYTES = 4096
#: Seconds between the watch's rounds (a listing of the tree's spill files and transcripts).
WATCH_INTERVAL = 1.0
#: Seconds without a round before the watch counts as stuck (a listing hung on a slow disk).
STALE_AFTER = 10.0
#: The session column's cells at most (a Claude session is a 36-character UUID): shortened in
#: its middle, so that a clean Claude tree's table fits 80 columns beside its scrollbar; the file pane says it whole.
SESSION_CELLS = 10
COLUMNS = ("verdict", "size", "session", "file", "findings")
#: The table's rows at least (a header and 8 files), and the detail's below it (agents.tcss).
TABLE_MIN, DETAIL_MIN = 9, 13
_STATUS_STYLE = {"verified": "green", "linked": "cyan", "mismatch": "bold red", "expired": "bold red",
                 "unreadable": "bold magenta", "unchecked": "yellow", "orphan": "yellow"}


class AgentApp(App[None]):
    """Spill files of one agent's tree: a table of verdicts over the notice and the file."""

    CSS_PATH = ["agents.tcss", "screens.tcss"]
    # Enter on a row reads it too (the table's own Enter selects the row): "r" is the key the
    # footer can show, the table's Enter binding being hidden.
    BINDINGS = [("q", "quit", "Quit"), Binding("r", "read", "Read", key_display="r/⏎"),
                Binding("s", "search", "Search"), Binding("f5", "rescan", "Rescan"),
                Binding("question_mark", "help", "Help", key_display="?"),
                Binding("f1", "help", "Help", show=False)]

    def __init__(self, dialect: Dialect, tree: str, export_dir: str | None = None, live: bool = True) -> None:
        super().__init__()
        self.dialect = dialect
        self.root_path = tree
        #: The reader's exports go only under this directory (`tui --export-dir`, `serve --allow-export`).
        self.export_dir = export_dir
        self.report: Report | None = None
        self._rows: list[SpillFile | Link] = []
        #: Follow the tree and re-inspect it on change (not named ``watch``: Textual's method).
        self.live = live
        #: "off", "starting", "live" or "stale" (see check_watch); since when, for "stale".
        #: (Not ``watch_*`` names: Textual calls a ``watch_x`` method on a change of a reactive ``x``.)
        self.live_state = "off" if not live else "starting"
        self.stale_since = ""
        self.watch_problem: str | None = None
        #: Re-inspections done for a change the watch saw.
        self.refreshes = 0
        self._stop_watch = threading.Event()
        self._watch_thread: threading.Thread | None = None
        self._beat: float | None = None  # time.monotonic() of the watch's last round
        self._last_live = 0.0  # time.time() when the watch was last known healthy
        self._tree_gone = False
        self._inspection = 0  # the newest inspection asked for: an older one's report is dropped
        self._inspecting = False
        self._changed_meanwhile = False

    def compose(self) -> ComposeResult:
        yield Static(safe(f"{self.dialect.title}: {self.root_path} — verifying…"), id="summary")
        yield DataTable(id="files", cursor_type="row", zebra_stripes=True)
        with Horizontal(id="detail"):
            with VerticalScroll(id="notice-pane"):
                yield Static(Text("notice"), id="notice")
            with VerticalScroll(id="file-pane"):
                yield Static(Text("file"), id="file")
        yield Footer()

    def on_mount(self) -> None:
        for name in COLUMNS:
            self.query_one("#files", DataTable).add_column(name, key=name)
        self.inspect_tree()
        if self.live:
            self.start_watch()
            self.set_interval(1.0, self.check_watch)

    def on_unmount(self) -> None:
        self._stop_watch.set()

    def inspect_tree(self) -> None:
        self._inspection += 1
        self._inspecting = True
        self._inspect(self._inspection)

    @work(thread=True, exclusive=True)
    def _inspect(self, number: int) -> None:
        try:
            report = self.dialect.inspect(self.root_path, Options(now=time.time()))
        except Exception as exc:  # the tree changing under a re-inspection: said, the last report kept
            if not get_current_worker().is_cancelled:
                self.call_from_thread(self._inspected, None, number, f"{type(exc).__name__}: {exc}")
            return
        # A thread worker is not stopped by a newer one (exclusive only marks it cancelled):
        # its report, older than the newer's, is dropped rather than shown over it.
        if not get_current_worker().is_cancelled:
            self.call_from_thread(self._inspected, report, number)

    def _inspected(self, report: Report | None, number: int, error: str | None = None) -> None:
        if number != self._inspection:
            return  # a newer inspection is on its way
        self._inspecting = False
        if report is not None:
            self.show_report(report)
        else:
            self.notify(f"the inspection failed: {error}", severity="error", timeout=8)
        if self._changed_meanwhile:  # changes seen while it ran: one more inspection for them all
            self._changed_meanwhile = False
            self.refreshes += 1
            self.inspect_tree()

    # -- the live watch ------------------------------------------------------------------

    def start_watch(self) -> None:
        """The watch's thread: not a Textual worker, which ``workers.wait_for_complete()``
        (an app that has settled) would wait for forever; ended by ``_stop_watch`` at unmount."""
        self._stop_watch = threading.Event()
        self._beat, self.watch_problem = None, None
        self._watch_thread = threading.Thread(target=self._follow_tree, args=(self._stop_watch,),
                                              name="spillscope-agent-watch", daemon=True)
        self._watch_thread.start()

    def _follow_tree(self, stop: threading.Event) -> None:
        def heartbeat() -> None:
            self._tree_gone = not os.path.isdir(self.root_path)  # a gone tree lists as empty, not live
            self._beat = time.monotonic()
            if self.live_state != "live":  # said at once, not at the next tick of check_watch
                self._to_app(self.check_watch)

        try:
            for batch in poll(self.dialect, self.root_path, stop=stop, interval=WATCH_INTERVAL, heartbeat=heartbeat):
                self._to_app(self.tree_changed, len(batch))
            return
        except Exception as exc:  # said in the summary, never a crash
            self.watch_problem = f"the watch stopped: {type(exc).__name__}: {exc}"
        finally:
            if not stop.is_set() and self.watch_problem is None:
                self.watch_problem = "the watch stopped"
            self._to_app(self.check_watch)

    def _to_app(self, callback: object, *args: object) -> None:
        """``call_from_thread``, except while the app closes (nobody is listening then)."""
        if self._stop_watch.is_set() or not self.is_running:
            return
        try:
            self.call_from_thread(callback, *args)  # type: ignore[arg-type]
        except RuntimeError:
            pass

    def tree_changed(self, changes: int) -> None:
        """A round saw changes: the tree inspected again, at most one inspection at a time (an
        agent at work writes its transcript every second; a big tree takes longer to inspect)."""
        if self._inspecting:
            self._changed_meanwhile = True
            return
        self.refreshes += 1
        self.inspect_tree()

    def check_watch(self) -> None:
        """The watch's state from its beat: "live" only while rounds keep coming on a tree
        that is there; "stale" (since the last time it was live) otherwise."""
        if not self.live:
            return
        thread = self._watch_thread
        running = thread is not None and thread.is_alive() and self.watch_problem is None
        fresh = self._beat is not None and time.monotonic() - self._beat <= STALE_AFTER
        if running and fresh and not self._tree_gone:
            state = "live"
            self._last_live = time.time()
        elif running and self._beat is None:
            state = "starting"
        else:
            state = "stale"
            if self.live_state != "stale":
                self.stale_since = time.strftime("%H:%M:%S", time.localtime(self._last_live or time.time()))
        if state != self.live_state:
            self.live_state = state
            self.show_summary()

    def live_text(self) -> str:
        if self.live_state == "live":
            return "● live · "
        if self.live_state == "starting":
            return "○ starting the watch · "
        if self.live_state == "stale":
            thread = self._watch_thread
            why = self.watch_problem or ("the watch stopped" if thread is None or not thread.is_alive() else
                                         "the tree is gone" if self._tree_gone else
                                         f"no round for over {STALE_AFTER:g} s")
            return f"⚠ stale since {self.stale_since} ({why}; F5 rescans and restarts it) · "
        return ""

    def action_rescan(self) -> None:
        """Inspect the tree again now; restart the watch if it stopped."""
        self.inspect_tree()
        if self.live and (self._watch_thread is None or not self._watch_thread.is_alive()):
            self.start_watch()
            self.check_watch()

    # -- the table -----------------------------------------------------------------------

    @staticmethod
    def _row_key(item: SpillFile | Link) -> str:
        return item.path if isinstance(item, SpillFile) else "gone:" + (item.target or item.named or "")

    def show_report(self, report: Report) -> None:
        self.report = report
        links = report.status_of()
        by_file: dict[str, list[Finding]] = {}
        for finding in report.findings:
            for where in {finding.path, finding.locator} - {None}:
                by_file.setdefault(str(where), []).append(finding)
        table = self.query_one("#files", DataTable)
        # Kept across a refresh: the highlighted file (by path) and where the table was scrolled.
        old_row = table.cursor_row
        old = self._rows[old_row] if 0 <= old_row < len(self._rows) else None
        kept, scroll = (self._row_key(old) if old is not None else None), (table.scroll_x, table.scroll_y)
        # Every spill file, then every link whose file is gone (an expired notice has no file
        # to list, but it is a finding the table must show, not only the summary's count).
        present = {spill.path for spill in report.files}
        gone = [k for k in report.links if k.status == "expired" or (k.target is not None and k.target not in present)]
        self._rows = [*report.files, *gone]
        cells: list[tuple[Text, str, Text, Text, Text]] = []
        for row in self._rows:
            if isinstance(row, SpillFile):
                link = links.get(row.path)
                status = link.status if link is not None else "orphan"
                size, name, where = human_size(row.size), row.name, row.path
                # Its session: the layout's (a Claude file sits in its session's dir), else the
                # session of the transcript whose notice named it (qwen keeps files per project).
                session = row.session or (link.session if link is not None else None)
            else:
                where = row.target or row.named or ""  # a gone file is known by the path its notice wrote
                status, size, name = row.status, "—", where.replace("\\", "/").rsplit("/", 1)[-1]
                session = row.session
            cells.append((Text(status, style=_STATUS_STYLE.get(status, "")), size,
                          Text(middle(one_line(session), SESSION_CELLS)) if session else Text("—", style="dim"),
                          Text(one_line(name)), badges([x.code for x in by_file.get(where, [])])))
        # Each column as wide as its widest cell, set before any row is drawn. The table's own
        # auto width is measured later, when the table is next idle, and rows drawn before that
        # (a key pressed while the rows went in) stayed cached at the header's width: squeezed.
        widths = [max([cell_len(name), *(cell_len(str(c[i])) for c in cells)]) for i, name in enumerate(COLUMNS)]
        table.clear(columns=True)
        for name, width in zip(COLUMNS, widths):
            table.add_column(name, width=width, key=name)
        for i, row_cells in enumerate(cells):
            table.add_row(*row_cells, key=str(i))
        keys = [self._row_key(item) for item in self._rows]
        x, y = scroll
        if kept in keys:
            # The highlighted file stays on its screen line: rows that came or went above it
            # move the scroll with it (a file gone: the cursor stays at its row number).
            y += keys.index(kept) - old_row
            table.move_cursor(row=keys.index(kept), scroll=False)
        elif self._rows and old_row > 0:
            table.move_cursor(row=min(old_row, len(self._rows) - 1), scroll=False)
        # After the table's own scroll of the cursor into view, which the new cursor queued (it
        # defers itself once more: so does this).
        table.call_after_refresh(table.scroll_to, x, max(0, y), animate=False, force=True)
        self.show_summary()
        self.fit_table()
        if self._rows:
            self.show_file(table.cursor_row if 0 <= table.cursor_row < len(self._rows) else 0)

    def on_resize(self, event: events.Resize) -> None:
        self.fit_table(event.size.height)  # the app's own size is the old one still, here

    def fit_table(self, height: int | None = None) -> None:
        """The table as tall as its rows, within what leaves the detail a third of the screen
        (at least DETAIL_MIN rows), and TABLE_MIN rows (9 at 80x24, the .tcss's default) for a
        table with more rows than that whatever the size; a few rows leave the rest to the detail."""
        table = self.query_one("#files", DataTable)
        room = (self.size.height if height is None else height) - 2  # the summary's line and the footer's
        # The rows, the header, and a line for a sideways scrollbar when the columns are wider
        # than the screen beside a scrollbar (from the columns: the table's own size lags).
        sideways = sum(c.get_render_width(table) for c in table.columns.values()) > self.size.width - 2
        wanted = len(self._rows) + 1 + sideways
        table.styles.height = min(wanted, max(TABLE_MIN, room - max(DETAIL_MIN, room // 3)))

    def show_summary(self) -> None:
        report = self.report
        if report is None:
            self.query_one("#summary", Static).update(safe(f"{self.live_text()}{self.dialect.title}: "
                                                           f"{self.root_path} — verifying…"))
            return
        notices = report.notices()
        # The verdict is verify's (its default --fail-on is warning: a warning fails too), and
        # checking no notice is not a pass (the core's rule, verify's exit 3).
        worst = report.worst()
        verdict = ("FAIL" if worst is not None and SEVERITY_RANK[worst] >= SEVERITY_RANK["warning"]
                   else "NOTHING CHECKED" if notices["nothingChecked"] is not None else "OK")
        summary = Text()
        summary.append(f"{verdict} ", style="bold green" if verdict == "OK" else "bold white on red")
        # The counts first: at 80 columns the path is what may run off the line, not the findings.
        summary.append_text(safe(f"{count(len(report.findings), 'finding')} · {count(len(report.files), 'spill file')} · "
                                 f"{notices['checked']} of {notices['found']} notices checked · "
                                 f"{self.live_text()}{self.dialect.title}: {self.root_path}"))
        self.query_one("#summary", Static).update(summary)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self._rows):
            self.show_file(event.cursor_row)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read, search and rescan are the main view's: not active (nor in the footer) over
        the reader, the search or the help, where they would act on the table hidden beneath."""
        if action in ("read", "search", "rescan") and len(self.screen_stack) > 1:
            return False
        return True

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(agent_help_renderable))

    def action_search(self) -> None:
        """Every spill file and transcript of the tree searched (``spillscope grep``'s engine)."""
        from .agent_search import AgentSearchScreen

        self.push_screen(AgentSearchScreen(self.dialect, self.root_path, self.export_dir))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_read()

    def action_read(self) -> None:
        """The highlighted spill file, whole, in the reader (a gone, symlinked or special one: said why)."""
        row = self.query_one("#files", DataTable).cursor_row
        if not 0 <= row < len(self._rows):
            return
        item = self._rows[row]
        if not isinstance(item, SpillFile):
            self.notify("The file is gone: only its notice is left", severity="warning")
        elif item.is_symlink or not item.is_regular:
            self.notify("Not opened: " + ("a symlink is not followed" if item.is_symlink else "not a regular file"),
                        severity="warning")
        else:
            self.load_reader(item.path, item.name)

    @work(thread=True, exclusive=True, group="open")
    def load_reader(self, path: str, title: str) -> None:
        from .document import PlainDocument
        from .reader import ReaderScreen

        try:
            document = PlainDocument(path)
        except OSError as exc:  # deleted or made unreadable since the inspection: said, never a crash
            self.call_from_thread(self.notify, f"cannot open {title}: {exc.strerror or exc}", severity="error",
                                  timeout=8)
            return
        # What the model saw of a spill file is the agent's notice, not a dsh preview: no seen ranges.
        screen = ReaderScreen(document, title, {}, [self.root_path], self.export_dir)
        self.call_from_thread(self.push_screen, screen)

    def show_file(self, row: int) -> None:
        assert self.report is not None
        item = self._rows[row]
        if isinstance(item, SpillFile):
            link, path = self.report.status_of().get(item.path), item.path
        else:
            link, path = item, item.target or item.named or ""
        findings = [x for x in self.report.findings if path in (x.path, x.locator)]
        self.query_one("#notice", Static).update(_notice_text(link, findings))
        self.query_one("#file", Static).update(_file_text(item, item.session or (link.session if link else None))
                                               if isinstance(item, SpillFile) else
                                               Text.assemble(safe(path + "\n"), ("the file is gone", "bold red")))


def _notice_text(link: Link | None, findings: list[Finding]) -> Text:
    out = Text()
    if link is None:
        out.append("orphan: nothing names this file\n", style="bold yellow")
    else:
        out.append(f"{link.status}", style=_STATUS_STYLE.get(link.status, ""))
        out.append(f"  {link.form}  checks: {', '.join(link.checks) or 'none'}\n")
        # The transcript's name and line (its dir is the tree's, shown in the summary).
        out.append_text(safe(f"{os.path.basename(link.transcript)}:{link.line}\n"))
    for x in findings:
        out.append(f"{x.code}: ", style="bold red" if x.severity == "error" else "yellow")
        out.append_text(safe(x.detail + "\n"))
    if link is not None:
        out.append("\n")
        out.append_text(safe(link.notice) if link.notice else Text("(the transcript kept the full text)", style="dim"))
    return out


def _file_text(f: SpillFile, session: str | None) -> Text:
    out = Text()
    out.append_text(safe(f"{f.name}" + (f" (session {session})" if session else "") + "\n"))
    got = read_spill(f.path)
    if got.data is None:
        out.append(f"cannot read: {got.error}\n", style="bold red")
        return out
    head = got.data[:HEAD_BYTES].decode("utf-8", "replace")
    out.append(f"{human_size(f.size)}; its start:\n", style="dim")
    out.append_text(safe(head))
    if len(got.data) > HEAD_BYTES:
        out.append(f"\n[… {len(got.data) - HEAD_BYTES} more bytes]", style="dim")
    return out
