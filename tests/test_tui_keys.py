"""Keys that must not surprise (issue 27, item 5), through Textual's Pilot: F1 helps and
a `q` then closes the help, not the app; Escape leaves the filter box; Ctrl+C says how to
quit in plain words; `s` is in the footer; the help is a key table that fits 80×24."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from spillscope.frontends.demo import write_demo
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.help import BROWSE, READER, SEARCH_ALL, HelpScreen
from spillscope.frontends.tui.tree import BrowseTree

from test_tui import open_resolving_reference, wait_for


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return write_demo(tmp_path_factory.mktemp("keys") / "demo")


def rows(app) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


async def test_f1_opens_help_and_q_then_closes_only_the_help(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        main = app.screen
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        assert app.screen is main and app.is_running  # the help closed; the app did not quit
        await pilot.press("f1")
        await pilot.press("f1")  # F1 again closes it too
        assert app.screen is main and app.is_running
        # Over the reader as well, and back to the reader.
        reader = await open_resolving_reference(app, pilot)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("q")
        assert app.screen is reader and app.is_running


async def test_escape_leaves_the_filter_box(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        box, tree = app.query_one("#filter", Input), app.query_one(BrowseTree)
        await pilot.press("slash", "R", "e", "s")
        assert box.has_focus and box.value == "Res"
        await pilot.press("escape")
        assert tree.has_focus and not box.has_focus
        assert box.value == "Res"  # the filter stays; only the keys go back to the tree
        await pilot.press("x", "y")
        assert box.value == "Res"  # typing no longer goes into it
        await pilot.press("escape")  # Escape on the tree does nothing harmful
        assert app.is_running and tree.has_focus


async def test_ctrl_c_says_how_to_quit_without_markup(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        await pilot.press("ctrl+c")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert said and app.is_running
        assert "ctrl+q" in said[-1] and "[" not in said[-1] and "]" not in said[-1], said


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_every_browse_key_is_in_the_footer(demo, size):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.verified)
        await pilot.pause(0.2)
        footer = rows(app)[-1]
        for key, label in [("q", "Quit"), ("?", "Help"), ("/", "Filter"), ("s", "Search"), ("f", "Findings"),
                           ("p", "Pause"), ("r", "Rescan")]:
            assert f"{key} {label}" in footer, (size, footer)


async def test_help_is_a_key_table_that_fits_80x24(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HelpScreen)
        box = app.screen.query_one("#help-box")
        region = box.region
        assert region.x >= 0 and region.y >= 0 and region.right <= 80 and region.bottom <= 24, region
        assert box.max_scroll_y == 0  # nothing to scroll to: all of it is on the screen
        shown = "\n".join(rows(app))
        for key, what in BROWSE + READER + SEARCH_ALL:
            assert what in shown, what
        assert "Esc, q, ? or F1 closes this help" in shown
