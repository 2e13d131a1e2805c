"""A lazy text view for huge messages: it holds a window of the text, never the whole.

The window is a range of code points read through the document (``pread`` under the
hood). Scrolling past either end slides the window; jumps load a window around the
target. Text is drawn as plain segments with controls made visible — nothing in it is
ever interpreted as markup or as a terminal escape.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.cells import cell_len
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...util.text import visible
from .document import Document

WINDOW = 65_536  # code points held at once
TAB = "    "


@dataclass(frozen=True)
class DisplayLine:
    """One line of the reader's display: its first code point in the message and its raw text."""

    start: int  # code point offset in the message
    text: str  # the raw text of this display line (no newline)


class TextView(ScrollView, can_focus=True):
    """Shows one message of a document; see the module docstring."""

    COMPONENT_CLASSES = {"textview--hit", "textview--hit-omitted", "textview--hit-unlinked", "textview--current"}
    wrap: reactive[bool] = reactive(True)

    class Moved(Message):
        """The top of the view moved to a new code point offset."""

        def __init__(self, view: TextView, offset: int) -> None:
            super().__init__()
            self.view = view
            self.offset = offset

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.document: Document | None = None
        self.message = 1
        self.window_start = 0
        self.window_text = ""
        self.lines: list[DisplayLine] = []
        self.hits: list[tuple[int, int, bool | None]] = []  # (start cp, end cp, seen; None: not known)
        self.current_hit: int | None = None
        self._layout_width = 0

    # Loading --------------------------------------------------------------------
    def show(self, document: Document, message: int, offset: int = 0) -> None:
        self.document = document
        self.message = message
        self.load_window(offset)

    @property
    def total(self) -> int:
        if self.document is None:
            return 0
        return self.document.messages[self.message - 1].code_points

    def load_window(self, offset: int, top_at: int | None = None) -> None:
        """Load a window so that ``offset`` is visible (at the top, unless ``top_at``)."""
        if self.document is None:
            return
        offset = max(0, min(offset, self.total))
        start = max(0, offset - WINDOW // 4)
        # Start the window at a line boundary when one is close, so lines are whole.
        text = self.document.read(self.message, start, WINDOW)
        if start > 0:
            cut = text.rfind("\n", 0, offset - start)
            if cut >= 0:
                text, start = text[cut + 1 :], start + cut + 1
        self.window_start, self.window_text = start, text
        self._relayout()
        self.scroll_to_offset(offset if top_at is None else top_at)

    def wrap_width(self) -> int:
        """The cells a display line may take: the width lines are drawn in (render_line
        crops to it). Before the first layout there is none yet: a guess, redone on resize."""
        return max(1, self.scrollable_content_region.width or self.size.width or 80)

    def _relayout(self) -> None:
        # Lines are wrapped to the width they are drawn in, which is the content region
        # *minus the vertical scrollbar*. The stylesheet keeps the scrollbar's gutter
        # always (scrollbar-gutter: stable): were it shown only once the wrapped text
        # proved taller than the view, the region would shrink with no resize to say so,
        # and every wrapped line would lose its last cells to the crop (issue 27).
        width = self.wrap_width()
        self._layout_width = width
        lines: list[DisplayLine] = []
        pos = self.window_start
        for raw in self.window_text.split("\n"):
            shown = raw.replace("\t", TAB)
            if not self.wrap or cell_len(visible(shown)) <= width:
                lines.append(DisplayLine(pos, raw))
            else:
                # Wrap on code points of the raw text; each chunk is measured shown.
                i = 0
                while i < len(raw):
                    j, cells = i, 0
                    while j < len(raw):
                        w = cell_len(visible(raw[j].replace("\t", TAB)))
                        if cells + w > width and j > i:
                            break
                        cells += w
                        j += 1
                    lines.append(DisplayLine(pos + i, raw[i:j]))
                    i = j
            pos += len(raw) + 1
        self.lines = lines
        widest = max((cell_len(visible(l.text.replace("\t", TAB))) for l in lines), default=0)
        self.virtual_size = Size(width if self.wrap else widest + 1, len(lines))
        self.refresh()

    def on_resize(self) -> None:
        if self.document is not None and self.wrap_width() != self._layout_width:
            self._rewrap()

    def _rewrap(self) -> None:
        if self.document is not None and self.wrap_width() != self._layout_width:
            top = self.top_offset
            self._relayout()
            self.scroll_to_offset(top)

    def watch_wrap(self) -> None:
        if self.document is not None:
            top = self.top_offset
            self._relayout()
            self.scroll_to_offset(top)

    # Positions ------------------------------------------------------------------
    @property
    def top_offset(self) -> int:
        y = int(self.scroll_y)
        if not self.lines:
            return self.window_start
        return self.lines[min(y, len(self.lines) - 1)].start

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self.lines) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.lines[mid].start <= offset:
                lo = mid
            else:
                hi = mid - 1
        return max(0, lo)

    def scroll_to_offset(self, offset: int) -> None:
        window_end = self.window_start + len(self.window_text)
        if not (self.window_start <= offset <= window_end) and self.document is not None:
            self.load_window(offset)
            return
        self.scroll_to(y=self.line_of(offset), animate=False, immediate=True)
        self.post_message(self.Moved(self, offset))

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if self.document is None or not self.lines:
            return
        height = self.scrollable_content_region.height
        at_bottom = new + height >= len(self.lines) - 1
        window_end = self.window_start + len(self.window_text)
        if at_bottom and window_end < self.total and new > old:
            top = self.top_offset
            self.call_later(self.load_window, top, top)
        elif new <= 0 and old > 0 and self.window_start > 0:
            top = self.top_offset
            self.call_later(self.load_window, top, top)
        else:
            self.post_message(self.Moved(self, self.top_offset))

    # Drawing --------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if self.wrap and width != self._layout_width and self.document is not None:
            # Laid out for another width (a region that changed without a resize): a line
            # drawn now would be cropped. Lay out again before the next frame.
            self.call_later(self._rewrap)
        if index >= len(self.lines):
            return Strip.blank(width, self.rich_style)
        line = self.lines[index]
        base = self.rich_style
        segments: list[Segment] = []
        hit_style = self.get_component_rich_style("textview--hit")
        omitted_style = self.get_component_rich_style("textview--hit-omitted")
        unlinked_style = self.get_component_rich_style("textview--hit-unlinked")
        current_style = self.get_component_rich_style("textview--current")
        end = line.start + len(line.text)
        marks = [(max(s, line.start), min(e, end), seen, n) for n, (s, e, seen) in enumerate(self.hits)
                 if s < end and e > line.start] if self.hits else []
        pos = line.start
        for s, e, seen, n in marks:
            if s > pos:
                segments.append(Segment(self._shown(line.text[pos - line.start : s - line.start]), base))
            # a hit in a document no preview links is neither seen nor omitted: not known
            style = unlinked_style if seen is None else hit_style if seen else omitted_style
            if n == self.current_hit:
                style = style + current_style
            segments.append(Segment(self._shown(line.text[s - line.start : e - line.start]), base + style))
            pos = e
        if pos < end or not segments:
            segments.append(Segment(self._shown(line.text[pos - line.start :]), base))
        strip = Strip(segments).crop(scroll_x, scroll_x + width).extend_cell_length(width, base)
        return strip

    @staticmethod
    def _shown(text: str) -> str:
        return visible(text.replace("\t", TAB))
