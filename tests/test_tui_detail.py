"""The detail pane says the verdict first and wraps where a reader expects (issue 27, item 2).

At 80×24 the notice box ended at "locator" and a cut path: whether the reference resolves
("✔ resolves" / "✘ EXPIRED"), its bytes and its hint needed Tab, Tab, End. And a path was
broken anywhere ("…/spi|ll-root"): Rich breaks lines only at spaces, and a path has none.
Checked on the screen at three sizes, and on the wrapping rule for any text and width."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from textual.geometry import Region
from textual.widgets import Static

from spillscope.frontends.demo import write_demo
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.panels import VERDICT
from spillscope.frontends.tui.safe_text import BREAK_AFTER, BreakableText, break_offsets
from spillscope.frontends.tui.widgets import BrowseTree

from test_tui import nodes, select, wait_for

SIZES = [(80, 24), (120, 40), (200, 50)]

#: The first words of each verdict the notice pane may give.
FIRST = {"intact": "✔ intact", "unavailable": "full snapshot unavailable",
         **{status: said.split(":")[0] for status, (said, _) in VERDICT.items()}}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return write_demo(tmp_path_factory.mktemp("detail") / "demo")


def strip_text(strip) -> str:
    return "".join(seg.text for seg in strip)


def shown_rows(app, widget) -> list[str]:
    """What the terminal shows of a scrolling pane: its content region's rows."""
    region = widget.scrollable_content_region
    strips = app.screen._compositor.render_strips()
    return [strip_text(strips[y].crop(region.x, region.right)).rstrip() for y in range(region.y, region.bottom)]


def whole_rows(widget: Static) -> list[str]:
    """Every row of a Static as it is drawn (also the rows its pane shows only when scrolled)."""
    size = widget.size
    return [strip_text(s).rstrip() for s in widget.render_lines(Region(0, 0, size.width, widget.virtual_size.height or size.height))]


def opportunity(before: str, after: str) -> bool:
    """A line may break between these two characters."""
    return before.isspace() or before in BREAK_AFTER or cell_len(before) == 2 or cell_len(after) == 2


def check_field_wraps_at_breaks(rows: list[str], label: str, value: str, width: int) -> None:
    """The rows from ``label`` on show ``label + value`` whole, each break at a break
    opportunity — or inside a piece with none, that is longer than a whole line."""
    start = next(i for i, r in enumerate(rows) if r.startswith(label))
    want = label + value
    got = ""
    previous = ""
    for row in rows[start:]:
        if got:
            at = len(got)
            if not opportunity(want[at - 1], want[at]):
                # A fold is allowed only inside a piece with no break opportunity: the row that
                # ended at the break must be all one such piece (the part after the label).
                piece = previous[len(label):] if previous is rows[start] else previous
                assert not any(opportunity(a, b) for a, b in zip(piece, piece[1:])), (
                    f"{label.strip()} broken mid-word at {want[at - 5:at]!r}|{want[at:at + 5]!r}: {rows[start:]}")
        got += row
        previous = row
        if len(got) >= len(want):
            break
    assert got == want, (got, want)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_the_verdict_is_the_first_thing_the_notice_pane_shows(demo, size):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        refs = [n for n in nodes(tree) if n.data is not None and n.data.kind == "reference"]
        assert {n.data.obj.status for n in refs} >= {"intact", "resolves", "unavailable", "expired"}
        for node in refs:
            await select(pilot, tree, node)
            await pilot.pause(0.1)
            pane = app.query_one("#notice-pane")
            assert pane.scroll_y == 0
            rows = shown_rows(app, pane)
            status = node.data.obj.status
            assert rows[0].startswith(FIRST[status]), (size, status, rows)
            snap = node.data.obj.entry.snapshot or {}
            if snap.get("status") == "saved":
                # The facts the verdict rests on follow it, still without scrolling.
                shown = "\n".join(rows)
                assert f"bytes    {snap['bytes']}" in shown and "hint " in shown, (size, rows)
                check_field_wraps_at_breaks(whole_rows(app.query_one("#notice", Static)), "locator  ",
                                            snap["locator"], pane.scrollable_content_region.width)


#: Widths around the narrow layouts, where the detail pane is narrowest and most values wrap.
FIELD_SIZES = SIZES + [(w, 24) for w in range(70, 100, 5)]


@pytest.mark.parametrize("size", FIELD_SIZES, ids=[f"{w}x{h}" for w, h in FIELD_SIZES])
async def test_an_artifacts_path_wraps_at_its_separators(demo, size):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        arts = [n for n in nodes(tree) if n.data is not None and n.data.kind == "artifact"]
        assert arts
        for node in arts:
            await select(pilot, tree, node)
            await pilot.pause(0.1)
            info = app.query_one("#info", Static)
            whole = whole_rows(info)
            art = node.data.obj
            # Every field of the table, not only the path ("session-reference-transcri|pt" was the kind).
            for label, value in (("path", art.path), ("kind", art.kind), ("suggested name", art.suggested_name)):
                if value is None:
                    continue
                at = next(i for i, r in enumerate(whole) if r.startswith(label + " "))
                # The value column starts after the label: its rows are the value's pieces.
                indent = len(whole[at]) - len(whole[at][len(label) + 1:].lstrip())
                rows = [whole[at][indent:]] + [r[indent:] for r in whole[at + 1:] if not r[:indent].strip()]
                check_field_wraps_at_breaks(rows, "", value, info.size.width - indent)


# Pieces of every kind: words, paths, separators, runs of spaces, CJK, and tokens longer
# than a line (which alone may be folded anywhere).
PIECE = st.sampled_from(["the", "spill", "store", "/", "-", "_", ".", "  ", " ", "界面", "文", "😀", "e\u0301",
                         "session-reference-1.txt", "x" * 45, "0123456789abcdef" * 2])


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECE, max_size=40), st.integers(min_value=4, max_value=60))
def test_breakable_text_breaks_only_where_it_may(pieces, width):
    line = "".join(pieces)
    offsets = break_offsets(line, width)
    assert offsets == sorted(set(offsets)) and all(0 < o < len(line) for o in offsets)
    bounds = [0, *offsets, len(line)]
    rows = [line[a:b] for a, b in zip(bounds, bounds[1:])]
    assert "".join(rows) == line  # nothing dropped by the division
    for n, (row, nxt) in enumerate(zip(rows, rows[1:])):
        assert cell_len(row.rstrip()) <= width, (row, width)
        if not opportunity(row[-1], nxt[0]):
            # A fold: only inside a piece with no break opportunity, filling its line.
            assert not any(opportunity(a, b) for a, b in zip(row, row[1:])), (rows, n)
            assert cell_len(row) >= width - 1, (rows, n)
    assert cell_len(rows[-1].rstrip()) <= width
    # As rendered: every line fits; the text is all there (spaces at a break may go).
    shown = Console(width=width, record=True, color_system=None)
    shown.print(BreakableText(line), end="")
    out = shown.export_text().split("\n")
    assert all(cell_len(o) <= width for o in out)
    assert "".join(o.rstrip() for o in out).replace(" ", "") == line.replace(" ", "")


async def test_a_tool_spills_status_comes_right_after_its_name(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        spills = [n for n in nodes(tree) if n.data is not None and n.data.kind == "tool-spill"]
        assert spills
        for node in spills:
            await select(pilot, tree, node)
            await pilot.pause(0.1)
            rows = shown_rows(app, app.query_one("#info-pane"))
            assert rows[0].startswith("Tool spill") and rows[1].startswith(f"status   {node.data.obj.status}"), rows
