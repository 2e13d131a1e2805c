"""The help screen: a table of every key of the browse, the reader and search-all, that
fits an 80×24 terminal whole. The conventions behind them (hit colours, ✂, shortened
tree lines, inert text) are prose, in docs/tui.md and the README, not here.

Separate because it is static reference text, not behaviour: it changes when keys change."""

from __future__ import annotations

from typing import Callable

from rich.console import Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

BROWSE = [
    ("↑ ↓", "move"),
    ("Enter", "open a transcript"),
    ("/", "filter (Esc: back)"),
    ("f", "finding filter"),
    ("s", "search the whole root"),
    ("p", "pause the live watch"),
    ("r", "rescan"),
    ("t", "stats: where the bytes are"),
    ("o", "order by name, size, age"),
    ("^p", "commands, themes"),
    ("F1 ?", "this help"),
    ("q", "quit"),
]
READER = [
    ("n N", "next / previous msg"),
    ("g", "go to: m 3, l 120,"),
    ("", "b 5000, c 100000"),
    ("w", "wrap on / off"),
    ("/", "search (re: regex)"),
    ("F3 ⇧F3", "next / previous hit"),
    ("y", "copy (OSC 52)"),
    ("e", "export to a file"),
    ("Esc", "back"),
]
SEARCH_ALL = [("re: i:", "regex, ignore case"), ("Enter", "open the reader at a hit"), ("Esc", "back")]
CLOSE = Text("Esc, q, ? or F1 closes this help · the rest: docs/tui.md", style="dim")
LEGEND = [
    Text.assemble(("seen", "bold underline"), ": a hit the model saw (green)  ", ("omitted", "strike"), ": one it did not (red)"),
    Text.assemble(("✂", "bold reverse"), " where a preview was cut · ␛ ␀ ⏎ ⟨U+202E⟩: controls, shown inert"),
    CLOSE,
]
#: The agents' app (agent_app.py): a table of spill files, not dsh's tree; its reader and
#: search-all are dsh's, without seen/omitted hits (a spill file has no dsh preview).
AGENT_BROWSE = [
    ("↑ ↓", "move; the notice follows"),
    ("Enter r", "read the file whole"),
    ("s", "search the whole tree"),
    ("F5", "rescan, restart the watch"),
    ("F1 ?", "this help"),
    ("q", "quit"),
]
AGENT_LEGEND = [
    Text("● live: re-verified on change · stale since: changes not followed"),
    Text("␛ ␀ ⏎ ⟨U+202E⟩: controls, shown inert"),
    CLOSE,
]


def key_table(title: str, rows: list[tuple[str, str]]) -> Group:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold cyan", no_wrap=True, min_width=6)
    table.add_column()  # wraps below 80 columns rather than cut
    for key, what in rows:
        table.add_row(key, what)
    # The style on the title's span, not the whole Text: a cell's padding is not underlined.
    return Group(Text.assemble((title, "bold underline")), table)


def help_renderable(browse: list[tuple[str, str]] | None = None, legend: list[Text] | None = None) -> RenderableType:
    """Browse beside the reader and search-all, the legend below: 20 rows, so that it
    fits 80×24 inside its border with rows to spare for a key or two more. dsh's keys by
    default; the agents' app passes its own browse keys and legend."""
    both = Table.grid(padding=(0, 3))
    both.add_row(key_table("Browse", BROWSE if browse is None else browse),
                 Group(key_table("Reader", READER), Text(""), key_table("Search all (s)", SEARCH_ALL)))
    return Group(both, Text(""), *(LEGEND if legend is None else legend))


def agent_help_renderable() -> RenderableType:
    return help_renderable(AGENT_BROWSE, AGENT_LEGEND)


class HelpScreen(ModalScreen[None]):
    """Every key, in a table that fits 80×24; it scrolls (↑/↓, PgUp/PgDn, the mouse)
    only on a terminal smaller than that."""

    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close")]

    def __init__(self, keys: Callable[[], RenderableType] = help_renderable) -> None:
        super().__init__()
        #: What the table shows: dsh's keys (help_renderable) or the agents' (agent_help_renderable).
        self.render_keys = keys

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(self.render_keys(), id="help-keys", markup=False)

    def on_mount(self) -> None:
        box = self.query_one("#help-box")
        # As wide as the table (and its border and padding), within the screen (the .tcss).
        console = self.app.console
        box.styles.width = Measurement.get(console, console.options, self.render_keys()).maximum + 4
        box.border_title = "spillscope — keys"
        box.focus()

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
