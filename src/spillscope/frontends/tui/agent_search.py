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
from textual import work
from textual.worker import get_current_worker

from ...dialects.base import Dialect
from ...dialects.search import TextHit, search_tree
from ...inspect.search.document import Hit
from ...inspect.search.pattern import Pattern
from ...util.text import js_json_string
from .labels import ContextLabel, FittingTree
from .search import HitNode, TreeSearchScreen, file_label, stream_results


class AgentSearchTree(FittingTree[HitNode[TextHit]]):
    COMPONENT_CLASSES = {"search--unlinked"}


class AgentSearchScreen(TreeSearchScreen[TextHit]):
    TREE = AgentSearchTree
    GROUP = "file"

    def __init__(self, dialect: Dialect, tree: str, export_dir: str | None = None) -> None:
        super().__init__()
        self.dialect, self.tree_path, self.export_dir = dialect, tree, export_dir

    def placeholder(self) -> str:
        return f"search every {self.dialect.title} spill file and transcript (re: regex, i: ignore case) — Enter to search"

    @work(thread=True, exclusive=True, group="tree-search")
    def run_search(self, pattern: Pattern) -> None:
        worker = get_current_worker()
        stream_results(self, lambda: search_tree(self.dialect, self.tree_path, pattern.compile()), TextHit,
                       lambda: worker.is_cancelled)

    def add_hit(self, tree: FittingTree[HitNode[TextHit]], ev: TextHit) -> None:
        node = self.groups.get(ev.path)
        if node is None:
            name = os.path.relpath(ev.path, self.tree_path)
            node = self.groups[ev.path] = tree.root.add(file_label(name, ev.kind), HitNode(), expand=True)
        node.add_leaf(self.hit_label(tree, ev), HitNode(ev))

    @staticmethod
    def hit_label(tree: FittingTree[HitNode[TextHit]], h: TextHit) -> Text:
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

    def hit_chosen(self, hit: TextHit) -> None:
        if hit.row is not None:
            self.notify(f"a row of {hit.row[0]} in {os.path.basename(hit.path)}: the database is not "
                        "opened in the reader (`spillscope grep --json` names the row)", severity="warning")
            return
        self.open_hit(hit)

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
