"""Safe text for the TUI's panels and trees: untrusted strings as inert rich ``Text``
(no markup, controls visible, clipped) and the finding badges. Separate because every
view (tree, panels, search) shows untrusted text, and all of it goes through here."""

from __future__ import annotations

from typing import Iterable

from rich.cells import cell_len, chop_cells
from rich.console import Console, ConsoleOptions, Group, JustifyMethod, OverflowMethod, RenderableType
from rich.measure import Measurement
from rich.containers import Lines
from rich.text import Text

from ...util.text import visible
from ...inspect.findings import CODES

BADGE_STYLE = {
    "expired-locator": "bold white on red",
    "bytes-mismatch": "black on yellow",
    "omission-mismatch": "black on yellow",
    "malformed-artifact": "bold white on magenta",
    "incomplete-artifact": "black on dark_orange",
    "insecure-permissions": "black on yellow",
    "symlink": "bold white on magenta",
    "unreadable": "bold white on red",
    "foreign-owner": "bold white on red",
}
#: Codes without a style of their own look like their severity.
SEVERITY_STYLE = {"error": "bold white on red", "warning": "black on yellow", "info": "reverse"}


#: The most of one untrusted string a panel shows: a 60 MB preview message or label must
#: not be laid out whole in a widget (the reader pages through artifacts of any size).
SHOWN_MAX = 1 << 16


def clip(text: str, limit: int = SHOWN_MAX) -> str:
    """``text``, or its head and tail with a note of how much between is not shown."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} more characters not shown here …]\n{text[-half:]}"


def safe(text: str, style: str = "") -> Text:
    """Untrusted text as an inert rich Text: no markup, controls visible, clipped."""
    return Text(visible(clip(text)), style=style, no_wrap=False)


def badges(codes: list[str]) -> Text:
    out = Text()
    for code in sorted(set(codes)):
        out.append(" ")
        out.append(f" {code} ", style=BADGE_STYLE.get(code) or SEVERITY_STYLE.get(CODES.get(code, ("",))[0], "reverse"))
    return out


#: A line may break after these (and after spaces): the parts of paths, names and URLs.
BREAK_AFTER = frozenset("/\\-_.,:;=&?#@+|")


def break_tokens(line: str) -> Iterable[tuple[int, str]]:
    """The pieces a line may be broken between, with where each starts: a word with the
    spaces after it, cut after each separator in :data:`BREAK_AFTER`; a wide (CJK)
    character is a piece of its own (a line may break on either side of it)."""
    start = 0
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        i += 1
        if ch in BREAK_AFTER or ch.isspace() or cell_len(ch) == 2 or (i < n and cell_len(line[i]) == 2):
            while i < n and line[i].isspace():
                i += 1
            yield start, line[start:i]
            start = i
    if start < n:
        yield start, line[start:]


def break_offsets(line: str, width: int) -> list[int]:
    """Where to break ``line`` to fit ``width`` cells: between pieces (see
    :func:`break_tokens`), a piece longer than a whole line folded — Rich's own
    ``divide_line``, with break opportunities at path separators as well as spaces."""
    breaks: list[int] = []
    offset = 0
    for start, piece in break_tokens(line):
        length = cell_len(piece.rstrip())
        if width - offset >= length:
            offset += cell_len(piece)
        elif length > width:
            folded = chop_cells(piece, width)
            for k, part in enumerate(folded):
                if start and (k or offset):
                    breaks.append(start)
                start += len(part)
                offset = cell_len(part)
        elif offset and start:
            breaks.append(start)
            offset = cell_len(piece)
    return breaks


class BreakableText(Text):
    """Rich text that wraps at word *and* path-separator boundaries ("…/spill-root/" may
    break after "/" or "-", never in "spi|ll"), folding only a piece longer than the line.
    Rich breaks only at spaces, so a path, which has none, was cut anywhere."""

    @classmethod
    def of(cls, text: Text) -> BreakableText:
        return cls(text.plain, style=text.style, justify=text.justify, overflow=text.overflow,
                   no_wrap=text.no_wrap, end=text.end, tab_size=text.tab_size, spans=list(text.spans))

    def wrap(self, console: Console, width: int, *, justify: JustifyMethod | None = None,
             overflow: OverflowMethod | None = None, tab_size: int = 8, no_wrap: bool | None = None) -> Lines:
        if no_wrap or self.no_wrap or overflow == "ignore":
            return super().wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)
        lines = Lines()
        for line in self.split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(tab_size)
            pieces = line.divide(break_offsets(line.plain, width))
            for piece in pieces:
                piece.rstrip_end(width)
            lines.extend(pieces)
        return lines

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        lines = self.plain.splitlines()
        widest = max((cell_len(line) for line in lines), default=0)
        piece = max((cell_len(p.rstrip()) for line in lines for _, p in break_tokens(line)), default=widest)
        return Measurement(piece, widest)


def breakable(*parts: RenderableType) -> Group:
    """A panel's parts as a group, each text wrapping where a reader expects it to."""
    return Group(*(BreakableText.of(p) if isinstance(p, Text) else p for p in parts))


__all__ = ["BADGE_STYLE", "BREAK_AFTER", "SEVERITY_STYLE", "SHOWN_MAX", "BreakableText", "badges", "break_offsets",
           "break_tokens", "breakable", "clip", "safe"]
