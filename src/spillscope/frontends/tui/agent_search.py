"""The search of another agent's whole tree in its TUI: every hit in the exact text of its
spill files and in its transcripts' decoded strings (``spillscope grep``'s engine,
:func:`spillscope.dialects.search.search_tree`), streamed from a worker and grouped by file.
Enter opens the reader at a spill file's hit, or at a transcript hit's line (the record as
it is stored: its strings escaped).

Apart from dsh's search screen (search.py), which walks a spill root and says whether the
model saw each hit; this one has no preview to tell that by: the agent's notice is shown
beside each file in the main view."""

from __future__ import annotations

import os

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static, Tree
from textual.widgets.tree import TreeNode
from textual.worker import get_current_worker

from ..format import count
from ...dialects.base import Dialect
from ...dialects.search import TextHit, search_tree
from ...inspect.findings import Finding
from ...inspect.search.document import Hit
from ...inspect.search.pattern import Pattern, PatternError
from ...util.text import js_json_string
from .footer import FittingFooter
from .labels import ContextLabel, Extra, FitLabel, FittingTree
from .search import MAX_SHOWN, finding_label, parse_query, stream_results


class AgentHitNode:
    """What a tree node stands for: a hit, or None for a group or a finding."""

    __slots__ = ("hit",)

    def __init__(self, hit: TextHit | None = None) -> None:
        self.hit = hit


class AgentSearchTree(FittingTree[AgentHitNode]):
    COMPONENT_CLASSES = {"search--unlinked"}


class AgentSearchScreen(Screen[None]):
    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, dialect: Dialect, tree: str, export_dir: str | None = None) -> None:
        super().__init__()
        self.dialect, self.tree_path, self.export_dir = dialect, tree, export_dir
        self.hits = self.bad = 0
        self._files: dict[str, TreeNode[AgentHitNode]] = {}

    def compose(self) -> ComposeResult:
        yield Input(placeholder=f"search every {self.dialect.title} spill file and transcript (re: regex, i: ignore "
                                "case) — Enter to search", id="search-input")
        yield AgentSearchTree("hits", id="search-tree")
        yield Static(id="search-status", markup=False)
        yield FittingFooter()

    def on_mount(self) -> None:
        tree = self.query_one(AgentSearchTree)
        tree.show_root = False
        tree.root.expand()
        self.query_one(Input).focus()
        self.set_status("type a phrase and press Enter")

    def set_status(self, text: str) -> None:
        self.query_one("#search-status", Static).update(Text(text))

    @on(Input.Submitted, "#search-input")
    def submitted(self, event: Input.Submitted) -> None:
        pattern = parse_query(event.value)
        if pattern is None:
            return
        try:
            pattern.compile()
        except PatternError as exc:
            self.set_status(f"cannot search: {exc}")
            return
        tree = self.query_one(AgentSearchTree)
        tree.clear()
        tree.root.expand()
        self._files.clear()
        self.hits = self.bad = 0
        self.set_status("searching…")
        self.run_search(pattern)
        tree.focus()

    @work(thread=True, exclusive=True, group="tree-search")
    def run_search(self, pattern: Pattern) -> None:
        worker = get_current_worker()
        stream_results(self, lambda: search_tree(self.dialect, self.tree_path, pattern.compile()), TextHit,
                       lambda: worker.is_cancelled)

    def add_results(self, batch: list[TextHit | Finding], done: bool = False, capped: bool = False) -> None:
        if not self.is_attached:
            return
        tree = self.query_one(AgentSearchTree)
        for ev in batch:
            if isinstance(ev, Finding):
                self.bad += 1
                tree.root.add_leaf(finding_label(ev), AgentHitNode())
                continue
            self.hits += 1
            node = self._files.get(ev.path)
            if node is None:
                name = os.path.relpath(ev.path, self.tree_path)
                node = self._files[ev.path] = tree.root.add(
                    FitLabel(name=name, name_style="cyan", tail_share=0.7, kept=(Extra(f"[{ev.kind}]", "cyan"),)),
                    AgentHitNode(), expand=True)
            node.add_leaf(self.hit_label(tree, ev), AgentHitNode(ev))
        state = "done" if done else "searching…"
        note = f" (stopped at {MAX_SHOWN})" if capped else ""
        bad = f", {count(self.bad, 'file')} not searched" if self.bad else ""
        self.set_status(f"{count(self.hits, 'hit')}{note} in {count(len(self._files), 'file')}{bad} · {state}")

    @staticmethod
    def hit_label(tree: AgentSearchTree, h: TextHit) -> Text:
        """Where (a database row, a transcript's line and field, a spill file's code point),
        then the context with the match, which a narrow line never shortens."""
        if h.row is not None:
            where = f"{h.row[0]} {h.row[1]} {h.field or ''} "
        elif h.line is not None:
            where = f"line {h.line:>5} {h.field or ''} "
        else:
            where = f"cp {h.start:>9} "
        return ContextLabel(where + " ", h.before.replace("\n", "↵"), h.match.replace("\n", "↵"),
                            h.after.replace("\n", "↵"), tree.get_component_rich_style("search--unlinked"))

    @on(Tree.NodeHighlighted, "#search-tree")
    def highlighted(self, event: Tree.NodeHighlighted[AgentHitNode]) -> None:
        event.stop()

    @on(Tree.NodeSelected, "#search-tree")
    def selected(self, event: Tree.NodeSelected[AgentHitNode]) -> None:
        event.stop()
        data = event.node.data
        if data is None or data.hit is None:
            return
        if data.hit.row is not None:
            self.notify(f"a row of {data.hit.row[0]} in {os.path.basename(data.hit.path)}: the database is not "
                        "opened in the reader (`spillscope grep --json` names the row)", severity="warning")
            return
        self.open_hit(data.hit)

    @work(thread=True, exclusive=True, group="open-hit")
    def open_hit(self, h: TextHit) -> None:
        from .document import PlainDocument
        from .reader import ReaderScreen

        app = self.app
        try:
            document = PlainDocument(h.path)
        except OSError as exc:  # gone, or a symlink now (O_NOFOLLOW): said
            app.call_from_thread(app.notify, f"cannot open {os.path.basename(h.path)}: {exc.strerror or exc}",
                                 severity="error", timeout=8)
            return
        if h.line is None:
            start, end = h.start, h.end  # a spill file's text is the document's
        else:
            # A transcript hit counts in one decoded string of a JSON line: the reader shows
            # the line as stored, so the match is marked where its escaped form is in it.
            start = end = document.offset_of_line(1, h.line - 1)
            line_end = document.text.find("\n", start)
            at = document.text.find(js_json_string(h.match)[1:-1], start, None if line_end < 0 else line_end)
            if at >= 0:
                start, end = at, at + len(js_json_string(h.match)) - 2
        reader = ReaderScreen(document, os.path.basename(h.path), {}, [self.tree_path], self.export_dir)

        def place() -> None:
            reader.show_message(1, start)
            if end > start:
                reader.apply_hits([Hit(start, end, None)])
                reader.view.current_hit = 0
                reader.view.refresh()

        def push() -> None:
            app.push_screen(reader)
            reader.call_after_refresh(place)

        app.call_from_thread(push)
