"""The help screen: every key of the browse, the reader and search-all, in one scrolling modal.

Separate because it is static reference text, not behaviour: it changes when keys change."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# spillscope

**Browse** — `↑`/`↓` move, `Enter` opens a reference's transcript or an artifact,
`/` filters the tree by text, `s` searches the exact text of the whole root, `f` cycles the finding filter, `p` pauses the live watch,
`r` rescans, `t` shows where the bytes are (stats and charts), `o` orders the tree by name, size or age,
`ctrl+p` opens the command palette (themes too), `q` quits.

**Reader** — `n`/`N` next/previous message, `g` go to (`m 3`, `l 120`, `b 5000`,
`c 100000`, or a bare line number; past the end goes to the end, and says so), `w`
wraps on/off, `/` searches (prefix `re:` for a regex; `Escape` closes the box),
`F3`/`shift+F3` next/previous hit, `y` copies the message (through the terminal, by
OSC 52 — not every terminal passes it on), `e` exports it to a file, `Escape` goes back.

**Search all** (`s`) — the exact text of every transcript and tool output under the
root (`re:` for a regex, `i:` to ignore case); hits stream in grouped by session and
artifact, and `Enter` opens the reader at one.

Search hits the model **saw** (inside the preview) are green, **bold and underlined**;
hits that were **omitted** (only in the saved artifact) are red and ~~struck through~~ —
the styles tell them apart without colour too (`NO_COLOR`). The first 5000 hits are
marked (the status says `5000+` when there are more).

In a reference's preview, `✂` marks where the middle of a shortened message was cut:
the model saw its head, then its tail, then the omission marker.

On a narrow terminal the tree's lines shorten rather than run off the edge: ages and
counts go first, a long name loses its middle (`…`), badges take short names (`expired`,
`no-snapshot`, `perms`, `orphan`, `bytes≠`…) and `+N` counts the ones left out; a status
a badge already says is left out too. Sizes and statuses are never cut; the detail pane
beside the tree says everything in full.

Text is shown inert: escape sequences and controls appear as `␛`, `␀`, `⏎` (a CR, alone
or in CRLF), `⟨U+202E⟩`; lone surrogates as `⟨lone U+D800⟩`; markup is never interpreted.

`Escape`, `q` or `?` closes this help; `↑`/`↓`/`PgUp`/`PgDn` scroll it.
"""


class HelpScreen(ModalScreen[None]):
    """Every key; scrolls (↑/↓, PgUp/PgDn, the mouse) when the terminal is shorter than it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)

    def on_mount(self) -> None:
        self.query_one("#help-box").focus()

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
