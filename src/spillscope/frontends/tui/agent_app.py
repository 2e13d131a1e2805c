"""The TUI on another agent's tree (Claude Code, qwen-code, Gemini CLI, OpenCode): each spill
file with its verdict, and its notice beside the file's own start; Enter reads the whole file
in dsh's reader (exact text, search, go-to, wrap, copy, export); ``s`` searches the whole tree.

A separate, small app because the dsh TUI (app.py) is built on dsh's scan, logs and transcript
reader; this one shows a :class:`spillscope.dialects.base.Report`, which every dialect returns.
The inspection runs in a worker thread; untrusted text goes through ``safe_text.safe``.
"""

from __future__ import annotations

import os
import time

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Static

from ...dialects.base import Dialect
from ...dialects.records import Link, Options, Report, SpillFile
from ...dialects.checks import read_spill
from ...inspect.findings import SEVERITY_RANK, Finding
from ..format import count, human_size
from .safe_text import badges, safe

#: How much of a spill file is shown beside its notice (a notice's preview is at most ~2,000 characters).
HEAD_BYTES = 4096
_STATUS_STYLE = {"verified": "green", "linked": "cyan", "mismatch": "bold red", "expired": "bold red",
                 "unreadable": "bold magenta", "unchecked": "yellow", "orphan": "yellow"}


class AgentApp(App[None]):
    """Spill files of one agent's tree: a table of verdicts over the notice and the file."""

    CSS_PATH = ["agents.tcss", "screens.tcss"]
    # Enter on a row reads it too (the table's own Enter selects the row): "r" is the key the
    # footer can show, the table's Enter binding being hidden.
    BINDINGS = [("q", "quit", "Quit"), Binding("r", "read", "Read", key_display="r/⏎"),
                Binding("s", "search", "Search")]

    def __init__(self, dialect: Dialect, tree: str, export_dir: str | None = None) -> None:
        super().__init__()
        self.dialect = dialect
        self.root_path = tree
        #: The reader's exports go only under this directory (`tui --export-dir`, `serve --allow-export`).
        self.export_dir = export_dir
        self.report: Report | None = None
        self._rows: list[SpillFile | Link] = []

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
        table = self.query_one("#files", DataTable)
        table.add_columns("verdict", "size", "file", "findings")
        self.inspect_tree()

    @work(thread=True, exclusive=True)
    def inspect_tree(self) -> None:
        report = self.dialect.inspect(self.root_path, Options(now=time.time()))
        self.call_from_thread(self.show_report, report)

    def show_report(self, report: Report) -> None:
        self.report = report
        links = report.status_of()
        by_file: dict[str, list[Finding]] = {}
        for finding in report.findings:
            for where in {finding.path, finding.locator} - {None}:
                by_file.setdefault(str(where), []).append(finding)
        table = self.query_one("#files", DataTable)
        table.clear()
        # Every spill file, then every link whose file is gone (an expired notice has no file
        # to list, but it is a finding the table must show, not only the summary's count).
        present = {spill.path for spill in report.files}
        gone = [k for k in report.links if k.status == "expired" or (k.target is not None and k.target not in present)]
        self._rows = [*report.files, *gone]
        for row in self._rows:
            if isinstance(row, SpillFile):
                link = links.get(row.path)
                status = link.status if link is not None else "orphan"
                size, name, where = human_size(row.size), row.name, row.path
            else:
                where = row.target or row.named or ""  # a gone file is known by the path its notice wrote
                status, size, name = row.status, "—", where.replace("\\", "/").rsplit("/", 1)[-1]
            table.add_row(Text(status, style=_STATUS_STYLE.get(status, "")), size, safe(name),
                          badges([x.code for x in by_file.get(where, [])]))
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
                                 f"{notices['checked']} of {notices['found']} notices checked — "
                                 f"{self.dialect.title}: {self.root_path}"))
        self.query_one("#summary", Static).update(summary)
        if self._rows:
            self.show_file(0)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self._rows):
            self.show_file(event.cursor_row)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Read and search are the main view's: not active (nor in the footer) over the
        reader or the search, where they would act on the table hidden beneath."""
        if action in ("read", "search") and len(self.screen_stack) > 1:
            return False
        return True

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
        self.query_one("#file", Static).update(_file_text(item) if isinstance(item, SpillFile) else
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


def _file_text(f: SpillFile) -> Text:
    out = Text()
    out.append_text(safe(f"{f.name}" + (f" (session {f.session})" if f.session else "") + "\n"))
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
