"""The root-wide search screen: every hit in the exact text of the root's transcripts and
tool outputs, streamed from a worker and grouped by session and artifact; hits the model
saw are green, omitted ones red (as in the reader). Enter opens the reader at the hit."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Protocol, TypeVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static, Tree
from textual.widgets.tree import TreeNode
from textual.worker import get_current_worker

from ..format import count
from ...inspect.findings import Finding
from ...inspect.search.document import Hit
from ...inspect.search.pattern import Pattern, PatternError
from ...inspect.search.root import SearchHit, search_root
from .footer import FittingFooter
from .labels import ContextLabel, Extra, FitLabel, FittingTree

if TYPE_CHECKING:
    from textual.app import App

#: The screen stops listing (and searching) after this many hits.
MAX_SHOWN = 10000

#: A search's hit record: dsh's SearchHit, another agent's TextHit.
H = TypeVar("H")


@dataclass(frozen=True)
class HitNode(Generic[H]):
    """What a tree node stands for: a hit (``hit`` set), or a group or a finding."""

    hit: H | None = None


def parse_query(text: str) -> Pattern | None:
    """``re:`` + a regex, ``i:`` to ignore case (``i:re:`` both), else a fixed string."""
    ignore = False
    if text.startswith("i:"):
        ignore, text = True, text[2:]
    if not text:
        return None
    if text.startswith("re:"):
        return Pattern(text[3:], regex=True, ignore_case=ignore)
    return Pattern(text, ignore_case=ignore)


class ResultsScreen(Protocol):
    """What :func:`stream_results` needs of a search screen."""

    @property
    def app(self) -> App[None]: ...
    def set_status(self, text: str) -> None: ...
    def add_results(self, batch: list[Any], done: bool = False, capped: bool = False) -> None: ...


def stream_results(screen: ResultsScreen, events: Callable[[], Iterable[Any]], hit_type: type,
                   cancelled: Callable[[], bool]) -> None:
    """A search's events handed to ``screen.add_results`` on the app's thread, in batches
    every 0.1 s, until :data:`MAX_SHOWN` hits (of ``hit_type``); a search that fails says so
    in the status line, never crashes; one cancelled (a newer search) hands nothing more.
    Run from a search screen's worker thread (dsh's root, another agent's tree)."""
    app = screen.app
    batch: list[Any] = []
    last = time.monotonic()
    shown = 0
    try:
        for ev in events():
            if cancelled():
                return
            batch.append(ev)
            shown += isinstance(ev, hit_type)
            if time.monotonic() - last > 0.1 or shown >= MAX_SHOWN:
                last = time.monotonic()
                app.call_from_thread(screen.add_results, batch)
                batch = []
            if shown >= MAX_SHOWN:
                break
    except Exception as exc:  # a root or tree gone meanwhile: said, never a crash
        app.call_from_thread(screen.set_status, f"search failed: {exc}")
        return
    if not cancelled():
        app.call_from_thread(screen.add_results, batch, True, shown >= MAX_SHOWN)


def file_label(name: str, kind: str) -> FitLabel:
    """The row a file's hits are grouped under: its name, shortened from the left, and its kind."""
    return FitLabel(name=name, name_style="cyan", tail_share=0.7, kept=(Extra(f"[{kind}]", "cyan"),))


def finding_label(f: Finding) -> FitLabel:
    """A file or artifact the search could not read: its own row, in the list of hits."""
    return FitLabel(icon=("⚠ ", "bold yellow"), name=f"{f.code}: {f.where} {f.detail}", name_style="bold yellow")


class TreeSearchScreen(Screen[None], Generic[H]):
    """What both search screens are (dsh's root here, another agent's tree in .agent_search):
    a query line, the tree of hits and a status line; a query parsed and compiled (what RE2
    refuses said in the status line), the tree cleared and the search run on a worker
    (``run_search``), its results added in batches, a finding as a row of its own, counted in
    the status line. A subclass says where a hit goes in the tree (``add_hit``), how it reads
    (``hit_label``) and what Enter on it opens (``hit_chosen``)."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]
    #: The tree's class (its component classes style the hits)
    TREE: type[FittingTree[HitNode[Any]]]
    #: What the status line counts the hits in
    GROUP = "artifact"

    def __init__(self, query: str = "") -> None:
        super().__init__()
        self.initial = query
        self.hits = self.bad = 0
        #: The nodes the hits are grouped under, by path; the status line counts them
        self.groups: dict[str, TreeNode[HitNode[H]]] = {}

    def placeholder(self) -> str:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        yield Input(value=self.initial, placeholder=self.placeholder(), id="search-input")
        yield self.TREE("hits", id="search-tree")
        yield Static(id="search-status", markup=False)
        yield FittingFooter()

    def on_mount(self) -> None:
        tree = self.query_one(self.TREE)
        tree.show_root = False
        tree.root.expand()
        self.query_one(Input).focus()
        self.set_status("type a phrase and press Enter")
        if self.initial:
            self.start(self.initial)

    def set_status(self, text: str) -> None:
        self.query_one("#search-status", Static).update(Text(text))

    @on(Input.Submitted, "#search-input")
    def submitted(self, event: Input.Submitted) -> None:
        self.start(event.value)
        self.query_one(self.TREE).focus()

    def start(self, query: str) -> None:
        pattern = parse_query(query)
        if pattern is None:
            return
        try:
            pattern.compile()
        except PatternError as exc:
            self.set_status(f"cannot search: {exc}")
            return
        tree = self.query_one(self.TREE)
        tree.clear()
        tree.root.expand()
        self.clear_groups()
        self.hits = self.bad = 0
        self.set_status("searching…")
        self.run_search(pattern)

    def clear_groups(self) -> None:
        self.groups.clear()

    def run_search(self, pattern: Pattern) -> object:
        """Start the search (a worker that hands its results to ``add_results``)."""
        raise NotImplementedError

    def add_hit(self, tree: FittingTree[HitNode[H]], hit: H) -> None:
        raise NotImplementedError

    def add_results(self, batch: list[H | Finding], done: bool = False, capped: bool = False) -> None:
        if not self.is_attached:
            return
        tree = self.query_one(self.TREE)
        for ev in batch:
            if isinstance(ev, Finding):
                self.bad += 1
                tree.root.add_leaf(finding_label(ev), HitNode())
                continue
            self.hits += 1
            self.add_hit(tree, ev)
        state = "done" if done else "searching…"
        note = f" (stopped at {MAX_SHOWN})" if capped else ""
        bad = f", {count(self.bad, self.GROUP)} not searched" if self.bad else ""
        self.set_status(f"{count(self.hits, 'hit')}{note} in {count(len(self.groups), self.GROUP)}{bad} · {state}")

    @on(Tree.NodeHighlighted, "#search-tree")
    def highlighted(self, event: Tree.NodeHighlighted[HitNode[H]]) -> None:
        event.stop()  # the browse tree's handlers in the app are not for these nodes

    @on(Tree.NodeSelected, "#search-tree")
    def selected(self, event: Tree.NodeSelected[HitNode[H]]) -> None:
        event.stop()
        data = event.node.data
        if data is not None and data.hit is not None:
            self.hit_chosen(data.hit)

    def hit_chosen(self, hit: H) -> object:
        """Enter on a hit: open it (in a worker), or say why not."""
        raise NotImplementedError


class SearchTree(FittingTree[HitNode[SearchHit]]):
    COMPONENT_CLASSES = {"search--seen", "search--omitted", "search--unlinked"}


class SearchScreen(TreeSearchScreen[SearchHit]):
    TREE = SearchTree

    def __init__(self, root: str, logs: str | None, rebase: str | None, query: str = "") -> None:
        super().__init__(query)
        self.root, self.logs, self.rebase = root, logs, rebase
        self._sessions: dict[str, TreeNode[HitNode[SearchHit]]] = {}

    def placeholder(self) -> str:
        return "search the whole root (re: regex, i: ignore case) — Enter to search"

    def clear_groups(self) -> None:
        super().clear_groups()
        self._sessions.clear()

    @work(thread=True, exclusive=True, group="root-search")
    def run_search(self, pattern: Pattern) -> None:
        worker = get_current_worker()
        # findings_first: the search stops at MAX_SHOWN hits, and every artifact that could
        # not be searched is still listed and counted.
        stream_results(self, lambda: search_root(self.root, pattern, logs=self.logs, rebase=self.rebase,
                                                 cancelled=lambda: worker.is_cancelled, findings_first=True),
                       SearchHit, lambda: worker.is_cancelled)

    def add_hit(self, tree: FittingTree[HitNode[SearchHit]], ev: SearchHit) -> None:
        key = ev.session_dir
        snode = self._sessions.get(key)
        if snode is None:
            label = f"{ev.session} ({key})" if ev.session else key
            snode = self._sessions[key] = tree.root.add(FitLabel(name=label, name_style="bold"), HitNode(), expand=True)
        anode = self.groups.get(ev.path)
        if anode is None:
            name = ev.path.rsplit("/", 1)[-1]
            anode = self.groups[ev.path] = snode.add(file_label(name, ev.kind), HitNode(), expand=True)
        anode.add_leaf(self.hit_label(tree, ev), HitNode(ev))

    @staticmethod
    def hit_label(tree: FittingTree[HitNode[SearchHit]], h: SearchHit) -> Text:
        """``msg cp seen|omitted  before MATCH after``; a narrow line shortens the context
        around the match, never the match (see .labels.ContextLabel)."""
        cls = {True: "search--seen", False: "search--omitted", None: "search--unlinked"}[h.seen]
        where = f"msg {h.message:>3} " if h.message is not None else ""
        word = {True: "seen", False: "omitted", None: "unlinked"}[h.seen]
        return ContextLabel(f"{where}cp {h.start:>9}  {word:<8}  ", h.before.replace("\n", "↵"),
                            h.match.replace("\n", "↵"), h.after.replace("\n", "↵"), tree.get_component_rich_style(cls))

    @work(thread=True, exclusive=True, group="open-hit")
    def hit_chosen(self, h: SearchHit) -> None:
        from .document import open_document
        from .reader import ReaderScreen

        app = self.app
        try:
            document = open_document(h.path, h.kind)
            index = getattr(document, "index", None)
            if index is not None and h.message is not None:
                index.ensure(h.message, h.end + 1)
        except Exception as exc:
            app.call_from_thread(app.notify, f"cannot open {h.path}: {exc}", severity="error", timeout=8)
            return
        k = h.message or 1
        seen: dict[int, list[tuple[int, int]] | None] = {}
        link = getattr(app, "preview_link", lambda p: None)(h.path)
        if link is not None:
            seen = app.seen_ranges(h.path, link)  # type: ignore[attr-defined]
        forbidden = [p for p in (self.root, self.logs) if p]
        reader = ReaderScreen(document, h.path.rsplit("/", 1)[-1], seen, forbidden, getattr(app, "export_dir", None))

        def place() -> None:
            reader.show_message(k, h.start)
            reader.apply_hits([Hit(h.start, h.end, h.seen)])
            reader.view.current_hit = 0
            reader.view.refresh()

        def push() -> None:
            app.push_screen(reader)
            reader.call_after_refresh(place)

        app.call_from_thread(push)
