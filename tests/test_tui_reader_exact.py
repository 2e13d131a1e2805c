"""The reader shows every character of a message, at every width (issue 27, item 1).

At 80×24 a message taller than the view lost two characters per wrapped line: the text
was wrapped to the width the view had before its vertical scrollbar appeared, then drawn
cropped to the width left beside it. The rule: the reader's rows, read in order, are the
*display form* of the exact text — nothing dropped, nothing cut — at every width, with
and without a scrollbar, wrap on and off (off: scrolling sideways reaches every cell).

The display form is defined here, independently of the view: each line of the exact
text (split at LF) with a tab shown as four spaces and controls, format characters and
lone surrogates made visible by :func:`visible` (``␛``, ``⏎``, ``⟨U+202E⟩``…).

What is compared is what the screen shows: each width's first page is read from the
compositor (the terminal's rows, cropped to the text view's region by cells), and every
page — scrolled down, and sideways when wrap is off — through the view's own line
renderer, which the first page proves to be what the compositor draws."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.segment import Segment
from textual.strip import Strip

from textual.app import App

from spillscope.formats.transcript import render_transcript
from spillscope.frontends.tui import app as app_module
from spillscope.frontends.tui.document import TranscriptDocument
from spillscope.frontends.tui.reader import ReaderScreen
from spillscope.frontends.tui.textview import TextView
from spillscope.util.text import js_utf8, visible

#: Every width of the issue's class, 40 to 200 columns.
WIDTHS = range(40, 201)
HEIGHT = 24

# One of each kind of text whose cells and code points differ: wide CJK, astral emoji,
# combining marks (alone at a line's start too), tabs, C0/C1 controls, CR and CRLF, bidi
# and format controls, a lone surrogate, markup, long tokens without a break.
PIECES = ["The spill store keeps tool output out of context.", "界面文字", "😀🎉✨", "e\u0301a\u0308",
          "\tindented\t", "bell\x07nul\x00esc\x1b[31m", "cr\rcrlf\r\n", "c1\x85", "\u202eevil\u202c",
          "sep\u2028par\u2029", "\ufeffbom", "lone\ud800x", "[bold]markup[/]", "x" * 97, "\u0301start",
          "path/to/spill-root/0123456789ab-session-reference-1.txt"]


def long_text() -> str:
    """Taller than the view at every width: paragraphs of all the pieces, some lines empty."""
    lines = []
    for n in range(14):
        lines.append(" ".join(PIECES[(n + k) % len(PIECES)] for k in range(9)))
        if n % 5 == 2:
            lines.append("")
    return "\n".join(lines)


SHORT = "short: 界😀e\u0301\t\x1b[2J ⟨ok⟩ " + "w" * 30  # a few rows at most: no scrollbar


def display_lines(exact: str) -> list[str]:
    return [visible(line.replace("\t", "    ")) for line in exact.split("\n")]


def strip_text(strip: Strip) -> str:
    return "".join(seg.text for seg in strip)


def consume(rows: list[str], lines: list[str]) -> None:
    """The rows, read in order, are the display lines wrapped: each row shows the next
    piece of its line and then blank cells (a blank cell may also be a space of the text,
    so every reading is followed); a line that goes on takes the next row. A reading must
    use every row and every character of every line."""
    states = {(0, 0)}  # (line, offset in it) where the next row starts
    for r, row in enumerate(rows):
        nxt = set()
        for n, at in states:
            if n == len(lines):
                continue
            rest = lines[n][at:]
            if not rest:  # an empty line: a blank row
                if row.strip(" ") == "":
                    nxt.add((n + 1, 0))
                continue
            shown = len(row.rstrip(" "))  # the row's piece ends in its blanks
            for k in range(max(1, shown), len(row) + 1):
                if rest.startswith(row[:k]):
                    nxt.add((n + 1, 0) if k == len(rest) else (n, at + k))
        assert nxt, (f"row {r} {row!r} is not the next piece of any reading: expected one of "
                     f"{[lines[n][at:at + 40] for n, at in states if n < len(lines)]!r}")
        states = nxt
    assert (len(lines), 0) in states, f"not every character was shown: readings stop at {sorted(states)[:3]}"


def screen_rows(app, view: TextView) -> list[str]:
    """What the terminal shows inside the text view's region (cropped by cells)."""
    region = view.scrollable_content_region
    strips = app.screen._compositor.render_strips()
    return [strip_text(strips[y].crop(region.x, region.right)) for y in range(region.y, region.bottom)]


def page(view: TextView) -> list[str]:
    return [strip_text(view.render_line(y)) for y in range(view.scrollable_content_region.height)]


async def open_reader(tmp_path: Path, texts: list[str], size: tuple[int, int]):
    path = tmp_path / "000000000001-session-reference-1.txt"
    data = {"sessionId": "s", "label": "L", "cwd": None, "capturedThroughSeq": 1,
            "conversation": [{"role": "assistant", "text": t} for t in texts]}
    path.write_bytes(js_utf8(render_transcript(data, 3)))
    document = TranscriptDocument.open(str(path))
    while not document.advance():
        pass
    return ReaderApp(), document


class ReaderApp(App[None]):
    """The reader alone, with the app's stylesheet: 161 resizes of the whole browse
    beneath it would cost minutes, and only the reader's screen is measured."""

    CSS_PATH = [Path(app_module.__file__).with_name(name) for name in ("spillscope.tcss", "screens.tcss")]


def check_wrapped(app, view: TextView, exact: str) -> None:
    height = view.scrollable_content_region.height
    total = view.virtual_size.height
    rows: list[str] = []
    for top in range(0, max(1, total), height):
        view.scroll_to(y=top, animate=False, immediate=True)
        got = page(view)
        skip = top - int(view.scroll_y)  # the last page ends at the bottom: rows seen before
        rows += got[skip:][: total - top]
    consume(rows, display_lines(exact))
    # Wrapped: nothing to scroll sideways; every row fits the width it is drawn in.
    assert view.virtual_size.width <= view.scrollable_content_region.width
    assert view.max_scroll_x == 0


def check_unwrapped(app, view: TextView, exact: str) -> None:
    """Wrap off: one row per line; sideways scrolling reaches every cell of the widest."""
    lines = display_lines(exact)
    width = view.scrollable_content_region.width
    height = view.scrollable_content_region.height
    widest = max(cell_len(line) for line in lines)
    assert view.virtual_size.height == len(lines)
    assert view.max_scroll_x + width >= widest, "scrolling sideways stops before the end of the widest line"
    # Windows overlapping by two cells: a wide character cut at one window's edge is
    # whole in the next, so every character is seen whole in some window.
    xs = sorted({min(x, view.max_scroll_x) for x in range(0, widest, max(1, width - 2))})
    for top in range(0, len(lines), height):
        for x in xs:
            view.scroll_to(x=x, y=top, animate=False, immediate=True)
            sx, sy = int(view.scroll_x), int(view.scroll_y)
            for y, row in enumerate(page(view)):
                if sy + y >= len(lines):
                    break
                want = Strip([Segment(lines[sy + y])]).crop(sx, sx + width).extend_cell_length(width)
                assert row == strip_text(want), (sy + y, sx, row, strip_text(want))


def sample(wrap: bool, which: str) -> list[int]:
    if not wrap:
        return list(WIDTHS[::8])
    if which == "scrollbar":
        return [w for w in WIDTHS if w % 2 == 0 or 76 <= w <= 84]
    return [w for w in WIDTHS if w % 4 in (1, 3) and (w % 4 == 1 or w < 120)]


async def laid_out(pilot, app, view: TextView, width: int) -> None:
    """Until the terminal and the view have taken ``width`` (no fixed sleeps: 161 widths)."""
    await pilot.resize_terminal(width, HEIGHT)
    for _ in range(50):
        if app.size.width == width and view.region.width == width:  # the view spans the screen
            await pilot.pause()  # its lines laid out again (on its resize), and drawn
            return
        await pilot.pause()
    raise AssertionError(f"the view was not laid out at {width} columns")


@pytest.mark.parametrize("which", ["scrollbar", "no scrollbar"])
async def test_the_reader_shows_every_character_at_every_width(tmp_path, which):
    texts = [long_text(), SHORT]
    app, document = await open_reader(tmp_path, texts, (WIDTHS[0], HEIGHT))
    k = 1 if which == "scrollbar" else 2
    exact = document.read(k)
    assert exact == texts[k - 1]
    async with app.run_test(size=(WIDTHS[0], HEIGHT)) as pilot:
        reader = ReaderScreen(document, "exact", {}, [])
        await app.push_screen(reader)
        reader.show_message(k)
        view = reader.view
        for wrap in (True, False):
            view.wrap = wrap
            # Where the bug was (wrapped, beside a scrollbar) every other width and all
            # around 80; a dense sample of the rest (without a scrollbar the odd widths,
            # every other one past 120;
            # wrap off lays out the same lines at every width, only the window moves).
            # Together every width from 40 to 200 is wrapped; the suite's time is shared.
            for width in sample(wrap, which):
                await laid_out(pilot, app, view, width)
                # Come to the message from the other one (n / N), as a reader does: the
                # view goes from short to tall (a scrollbar appears) or back, with no resize.
                await pilot.press("n" if k == 1 else "N")
                await pilot.press("N" if k == 1 else "n")
                await pilot.pause()
                assert reader.message == k
                tall = view.virtual_size.height > view.scrollable_content_region.height
                assert tall == (which == "scrollbar"), (width, view.virtual_size)
                # The view's rows are what the terminal shows (its first page, drawn at the top).
                assert view.scroll_offset == (0, 0)
                assert screen_rows(app, view) == page(view), width
                (check_wrapped if wrap else check_unwrapped)(app, view, exact)
                view.scroll_to(x=0, y=0, animate=False, immediate=True)
