"""The transcript reader screen: the reassembled exact text, message by message, with go-to,
wrap, in-message search (seen/omitted hits), copy and export.

Separate from the browse (app.py) because it is a screen of its own over one document."""

from __future__ import annotations

import os
import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from ...inspect.search.document import Hit, find_hits
from ...inspect.search.pattern import PatternError
from ...formats.transcript.records import TranscriptError
from .document import Document
from .export import deliver_message, export_message
from .footer import FittingFooter
from .goto import Goto, parse_goto
from .labels import middle, one_line
from .prompts import ConfirmScreen, PromptScreen
from .textview import TextView

class ReaderScreen(Screen[None]):
    """The reassembled exact text, message by message, opened lazily."""

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("n", "message(1)", "Next msg"),
        Binding("N", "message(-1)", "Prev msg", key_display="N"),
        Binding("g", "goto", "Go to"),
        Binding("w", "toggle_wrap", "Wrap"),
        Binding("slash", "search", "Search"),
        Binding("f3", "hit(1)", "Next hit"),
        Binding("shift+f3", "hit(-1)", "Prev hit", show=False),
        Binding("y", "copy", "Copy"),
        Binding("e", "export", "Export"),
    ]

    def __init__(self, document: Document, title: str, seen: dict[int, list[tuple[int, int]] | None] | None,
                 forbidden: list[str], export_dir: str | None = None) -> None:
        super().__init__()
        self.document = document
        self.doc_title = title
        #: message → seen UTF-8 byte ranges (absent or None: not linked to a preview).
        self.seen: dict[int, list[tuple[int, int]] | None] = seen or {}
        #: True until :meth:`set_seen` brings the ranges of a linked transcript.
        self.seen_pending = seen is None
        self.forbidden = forbidden
        #: Exports go only under this directory (`tui --export-dir`, `serve --allow-export`).
        self.export_dir = export_dir
        self.message = 1
        self.hits: list[Hit] = []
        #: More hits than MAX_HITS: only the first ones are marked.
        self.hits_capped = False
        #: Why the query finds nothing (an invalid regex), else "".
        self.search_error = ""
        #: What the last jump could not do exactly ("message 99 does not exist…"), else "".
        self.clamped_note = ""
        self.query_text = ""

    def compose(self) -> ComposeResult:
        yield Static(id="reader-title", markup=False)
        yield TextView(id="reader-text")
        yield Input(placeholder="search (re: for a regex) — Enter for next hit, Escape to close", id="reader-search")
        yield Static(id="reader-status", markup=False)
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#reader-search", Input).display = False
        self.show_message(1)
        if not self.document.done:
            # Only after the first screen is drawn: indexing competes for the GIL.
            self.call_after_refresh(self.index_in_background)
        elif self.document.error is not None:
            self.notify(self.document.error, severity="error", timeout=10)

    @work(thread=True, exclusive=True, group="index")
    def index_in_background(self) -> None:
        """Finish the lazy index while the first screen is already showing."""
        worker = get_current_worker()
        last = 0.0
        try:
            while not worker.is_cancelled and not self.document.advance():
                time.sleep(0.001)  # let the UI thread take the GIL between batches
                if time.monotonic() - last > 0.25:
                    last = time.monotonic()
                    self.app.call_from_thread(self.update_status)
        except TranscriptError:
            pass  # a malformed tail: the document keeps it, reported just below
        except Exception as exc:  # vanished or unreadable mid-way
            self.app.call_from_thread(self.notify, f"{exc}", severity="error", timeout=10)
        if self.document.error is not None and not worker.is_cancelled:
            # Show it where the user is looking; the title keeps saying it.
            self.app.call_from_thread(self.notify, self.document.error, severity="error", timeout=10)
        if not worker.is_cancelled:
            self.app.call_from_thread(self.update_status)

    @property
    def view(self) -> TextView:
        return self.query_one(TextView)

    def show_message(self, k: int, offset: int = 0) -> None:
        if not self.document.messages:
            self.query_one("#reader-title", Static).update(Text(f"{self.shown_title()}: no messages ({self.document.note})"))
            return
        known = len(self.document.messages)
        if k > known and not self.document.done:
            self.notify(f"still indexing: message {k} is not reached yet", severity="warning")
            return
        k = max(1, min(k, known))
        if k != self.message:
            self.clamped_note = ""
        self.message = k
        self.view.hits = []
        self.view.show(self.document, k, offset)
        if self.query_text:
            self.run_search(self.query_text)
        self.update_status()

    def shown_title(self) -> str:
        """The document's name on one line of the title at most (its middle shortened):
        the counts after it must not be pushed out of the title's lines."""
        return middle(one_line(self.doc_title), max(12, (self.size.width or 80) - 4), 0.7)

    def on_resize(self) -> None:
        if self.document.messages and self.message:
            self.update_title()

    def update_title(self) -> None:
        k = self.message
        msg = self.document.messages[k - 1]
        count = f"{len(self.document.messages)}{'' if self.document.done else '+'}"
        title = Text.assemble((f" {self.shown_title()} ", "bold reverse"), f"  message {k}/{count}: ",
                              (msg.role, "bold cyan"), f"  ·  {msg.utf8_bytes} bytes · {msg.code_points} code points · {msg.lines} lines")
        if self.document.note:
            title.append(f"  ·  {self.document.note}", style="bold yellow")
        self.query_one("#reader-title", Static).update(title)

    def update_status(self, offset: int | None = None) -> None:
        # Workers report through call_from_thread; the screen may be gone or not composed yet.
        if not self.is_attached or not self.query(TextView):
            return
        view = self.view
        if view.document is None:
            return
        self.update_title()
        cp = view.top_offset if offset is None else offset
        line, byte = self.document.position(self.message, cp)
        msg = self.document.messages[self.message - 1]
        count = f"{len(self.document.messages)}{'' if self.document.done else '+'}"
        parts = [f"msg {self.message}/{count}", f"line {line + 1}/{msg.lines}",
                 f"byte {byte}/{msg.utf8_bytes}", f"cp {cp}/{msg.code_points}", f"wrap {'on' if view.wrap else 'off'}"]
        if self.clamped_note:
            parts.append(self.clamped_note)
        if self.query_text and self.search_error:
            parts.append(f"search: {self.search_error}")
        elif self.query_text:
            seen = sum(1 for h in self.hits if h.seen)
            omitted = sum(1 for h in self.hits if h.seen is False)
            cur = "" if view.current_hit is None else f"{view.current_hit + 1}/"
            more = "+" if self.hits_capped else ""
            # Counted as seen or omitted only where a preview is linked: else it is not known.
            split = f" ({seen} seen, {omitted}{more} omitted)" if seen + omitted else ""
            parts.append(f"search {cur}{len(self.hits)}{more} hits{split}")
        if self.seen_pending:
            parts.append("finding what the model saw…")
        elif self.seen.get(self.message) is None:
            parts.append("not linked to a preview")
        if not self.document.done:
            parts.append(self.document.note)
        self.query_one("#reader-status", Static).update(Text("  ·  ".join(parts)))

    @on(TextView.Moved)
    def moved(self, event: TextView.Moved) -> None:
        self.update_status(event.offset)

    def action_message(self, step: int) -> None:
        self.show_message(self.message + step)

    def action_toggle_wrap(self) -> None:
        self.view.wrap = not self.view.wrap
        self.update_status()

    def action_goto(self) -> None:
        def done(text: str | None) -> None:
            if not text:
                return
            goto = parse_goto(text)
            if goto is None:
                self.notify(f"cannot go to {text!r}: use m N, l N, b N or c N", severity="error")
                return
            self.goto(goto)

        self.app.push_screen(PromptScreen("Go to: m N (message) · l N (line) · b N (byte) · c N (code point)", "l 1"), done)

    def goto(self, goto: Goto) -> None:
        """Jump; the index is extended in a worker first, so the UI never waits on the disk."""
        self._goto_worker(goto)

    @work(thread=True, exclusive=True, group="goto")
    def _goto_worker(self, goto: Goto) -> None:
        doc = self.document
        if goto.unit == "message":
            k = goto.value
            if k > 0 and hasattr(doc, "index"):
                doc.index.ensure(k, 0)
            known = len(doc.messages)
            note = ""
            if k < 1:
                note = f"there is no message {k}: went to message 1"
            elif k > known and doc.done:
                note = f"message {k} does not exist: went to the last, {known}"
            self.app.call_from_thread(self._goto_message_done, k, note)
            return
        k = self.message
        msg = doc.messages[k - 1]
        if goto.unit == "line":
            cp = doc.offset_of_line(k, max(0, goto.value - 1))
            note = (f"line {goto.value} is past the last ({msg.lines}): went there" if goto.value > msg.lines
                    else "there is no line 0: went to line 1" if goto.value < 1 else "")
        elif goto.unit == "byte":
            cp = doc.offset_of_byte(k, goto.value)
            note = f"byte {goto.value} is past the end ({msg.utf8_bytes}): went to the end" if goto.value > msg.utf8_bytes else ""
        else:
            cp = goto.value
            note = f"code point {goto.value} is past the end ({msg.code_points}): went to the end" if goto.value > msg.code_points else ""
        cp = max(0, min(cp, msg.code_points))
        doc.read(k, cp, 1)  # indexed up to the target before the UI thread reads its window
        self.app.call_from_thread(self._goto_done, k, cp, note)

    def _goto_message_done(self, k: int, note: str) -> None:
        if not self.is_attached:
            return
        self.show_message(k)
        self._say_clamped(note)

    def _goto_done(self, k: int, cp: int, note: str = "") -> None:
        if not self.is_attached or k != self.message:
            return
        self.view.scroll_to_offset(cp)
        self._say_clamped(note)
        self.update_status(cp)

    def _say_clamped(self, note: str) -> None:
        """A jump that could not land where asked says where it went instead."""
        self.clamped_note = note
        if note:
            self.notify(note, severity="warning")
        self.update_status()

    def action_search(self) -> None:
        box = self.query_one("#reader-search", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#reader-search")
    def search_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        self.run_search(event.value)

    @on(Input.Submitted, "#reader-search")
    def search_submitted(self) -> None:
        self.action_hit(1)

    def action_back(self) -> None:
        """Escape: closes the search box when it is open, else leaves the reader."""
        box = self.query_one("#reader-search", Input)
        if box.display:
            box.display = False
            self.view.focus()
            return
        self.app.pop_screen()

    def set_seen(self, seen: dict[int, list[tuple[int, int]] | None]) -> None:
        """The seen ranges, once the app's worker has them: marks and status follow."""
        self.seen, self.seen_pending = seen, False
        if not self.is_attached:
            return
        if self.query_text:
            self.run_search(self.query_text)
        self.update_status()

    @work(thread=True, exclusive=True, group="search")
    def run_search(self, query: str) -> None:
        worker = get_current_worker()
        try:
            hits, capped = find_hits(self.document, self.message, query, self.seen.get(self.message),
                                     lambda: worker.is_cancelled)
            error = ""
        except PatternError as exc:
            hits, capped = [], False
            error = "not a valid regex: " + str(exc).removeprefix("invalid regex: ")
        if not worker.is_cancelled:
            self.app.call_from_thread(self.apply_hits, hits, capped, error)

    def apply_hits(self, hits: list[Hit], capped: bool = False, error: str = "") -> None:
        if not self.is_attached:
            return
        self.hits, self.hits_capped, self.search_error = hits, capped, error
        view = self.view
        view.hits = [(h.start, h.end, h.seen) for h in hits]
        view.current_hit = None
        view.refresh()
        self.update_status()

    def action_hit(self, step: int) -> None:
        if not self.hits:
            return
        view = self.view
        cur = view.current_hit
        if cur is None:
            top = view.top_offset
            nxt = next((i for i, h in enumerate(self.hits) if h.start >= top), 0) if step > 0 else len(self.hits) - 1
        else:
            nxt = (cur + step) % len(self.hits)
        view.current_hit = nxt
        view.scroll_to_offset(self.hits[nxt].start)
        view.refresh()
        self.update_status(self.hits[nxt].start)

    def message_text(self) -> str:
        return self.document.read(self.message)

    def action_copy(self) -> None:
        msg = self.document.messages[self.message - 1]
        if msg.utf8_bytes > 4 << 20:
            self.notify("message is over 4 MiB: export it instead (e)", severity="warning")
            return
        self.app.copy_to_clipboard(self.message_text())
        # OSC 52 has no reply: whether the text arrived is unknowable from here.
        self.notify(f"sent message {self.message} ({msg.utf8_bytes} bytes) to the clipboard through the "
                    "terminal (OSC 52); a terminal that ignores OSC 52 drops it silently — "
                    "e exports the message to a file instead", timeout=10)

    def action_export(self) -> None:
        message = self.message
        if self.app.is_web and self.export_dir is None:
            # In a browser the keys are whoever holds the socket: never a path on the
            # server's disk (the operator opts in with `serve --allow-export DIR`).
            self.deliver(message)
            return
        base = os.path.basename(self.document.path)
        default = os.path.join(self.export_dir or os.getcwd(), f"{base}.message-{message}.txt")

        def write(path: str, overwrite: bool) -> None:
            try:
                written, lone = export_message(self.document, message, path, self.forbidden, overwrite=overwrite,
                                               only_under=self.export_dir)
            except FileExistsError:
                def answered(yes: bool | None) -> None:
                    if yes:
                        write(path, True)
                    else:
                        self.notify("export cancelled: nothing written")

                self.app.push_screen(ConfirmScreen(f"{path} exists. Overwrite it?"), answered)
                return
            except (OSError, ValueError) as exc:
                self.notify(f"export failed: {exc}", severity="error")
                return
            note = f" ({lone} lone surrogates as U+FFFD)" if lone else ""
            self.notify(f"exported {written} bytes to {path}{note}")

        def done(path: str | None) -> None:
            if path:
                write(path, False)

        self.app.push_screen(PromptScreen("Export this message (exact UTF-8) to:", value=default), done)

    def deliver(self, message: int) -> None:
        try:
            name, sent, lone = deliver_message(self.app, self.document, message)
        except (OSError, ValueError) as exc:
            self.notify(f"export failed: {exc}", severity="error")
            return
        note = f" ({lone} lone surrogates as U+FFFD)" if lone else ""
        self.notify(f"sent message {message} ({sent} bytes{note}) to your browser as the download {name}; "
                    "nothing was written on the server", timeout=10)
