"""The TUI's main views on a reproducible demo, shared by the snapshot tests and by
``scripts/screenshots.py`` (so the screenshots show exactly what the tests check)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Awaitable, Callable

from spillscope.frontends.demo import Demo, write_demo
from spillscope.frontends.tui.app import SpillscopeApp

DEMO_DIR = Path("/tmp/spillscope-snapshots/demo")
#: The sizes the snapshot tests check every main view at: a small terminal, a common
#: one, a big one (the reference's preview and notice stack below 150 columns).
SIZES = [(80, 24), (120, 40), (200, 50)]
#: The screenshots' size: wide enough for the preview beside its notice.
SIZE = (200, 50)


def reproducible_demo() -> Demo:
    # Ages show as "3d" for any run within a day of writing.
    return write_demo(DEMO_DIR, fixed_time=time.time() - 3 * 86400 - 3600)


def make_app(demo: Demo) -> SpillscopeApp:
    # Watching, as `spillscope ROOT` runs: the views show the status a user sees ("● live").
    return SpillscopeApp(str(demo.root), str(demo.logs), watch=True)


async def _loaded(pilot) -> None:
    """Verified, and the watch live (its child process started): the status says so."""
    app = pilot.app
    for _ in range(500):
        if app.verified and app.watch_state == "live":
            break
        await pilot.pause(0.02)
    assert app.verified and app.watch_state == "live", (app.verified, app.watch_state, app.watch_detail)
    await pilot.pause(0.1)


async def _select(pilot, kind: str, pred) -> None:
    tree = pilot.app.query_one("#tree")
    stack, target = [tree.root], None
    while stack:
        node = stack.pop(0)
        if node.data is not None and node.data.kind == kind and pred(node.data):
            target = node
            break
        stack.extend(node.children)
    assert target is not None, kind
    for _ in range(100):
        tree.move_cursor(target)
        await pilot.pause(0.02)
        if tree.cursor_node is target:
            break
    await pilot.pause(0.1)


async def tree_view(pilot) -> None:
    await _loaded(pilot)
    await _select(pilot, "artifact", lambda d: d.obj.name.endswith("session-reference-1.txt"))


async def reference_view(pilot) -> None:
    await _loaded(pilot)
    await _select(pilot, "reference", lambda d: d.obj.status == "resolves")


async def expired_view(pilot) -> None:
    await _loaded(pilot)
    await _select(pilot, "reference", lambda d: d.obj.status == "expired")


async def reader_search_view(pilot) -> None:
    from spillscope.frontends.tui.screens import ReaderScreen

    await reference_view(pilot)
    await pilot.press("enter")
    for _ in range(200):
        if isinstance(pilot.app.screen, ReaderScreen):
            break
        await pilot.pause(0.02)
    screen = pilot.app.screen
    for _ in range(200):
        if not screen.seen_pending:
            break
        await pilot.pause(0.02)
    screen.show_message(6)
    await pilot.pause(0.1)
    await pilot.press("slash")
    screen.query_one("#reader-search").value = "appendix line 3"
    for _ in range(200):
        if screen.hits:
            break
        await pilot.pause(0.02)
    await pilot.press("f3")
    await pilot.pause(0.2)


async def help_view(pilot) -> None:
    await _loaded(pilot)
    await pilot.press("question_mark")
    await pilot.pause(0.2)


async def reader_goto_clamped_view(pilot) -> None:
    """The reader after `g c 100000000`: the status says the jump was clamped."""
    await reader_search_view(pilot)
    screen = pilot.app.screen
    await pilot.press("escape")  # closes the search box only
    await pilot.press("g")
    await pilot.pause(0.1)
    pilot.app.screen.query_one("#prompt-input").value = "c 100000000"
    await pilot.press("enter")
    for _ in range(100):
        if screen.clamped_note:
            break
        await pilot.pause(0.02)
    await pilot.pause(0.2)


async def search_all_view(pilot) -> None:
    """Search-all (`s`) for a phrase deep in long lines: each hit's context shortens around it."""
    from spillscope.frontends.tui.search import SearchScreen

    await _loaded(pilot)
    await pilot.press("s")
    for _ in range(100):
        if isinstance(pilot.app.screen, SearchScreen) and pilot.app.screen.is_mounted:
            break
        await pilot.pause(0.02)
    pilot.app.screen.query_one("#search-input").value = "tool output out of context"
    await pilot.press("enter")
    for _ in range(300):
        if "done" in str(pilot.app.screen.query_one("#search-status").content):
            break
        await pilot.pause(0.02)
    await pilot.pause(0.2)


async def stats_view(pilot) -> None:
    """The stats screen (`t`): totals, the next sweep, and its three charts."""
    from spillscope.frontends.tui.stats import StatsScreen

    await _loaded(pilot)
    await pilot.press("t")
    for _ in range(300):
        if isinstance(pilot.app.screen, StatsScreen) and pilot.app.screen.counts:
            break
        await pilot.pause(0.02)
    await pilot.pause(0.2)


VIEWS: dict[str, Callable[..., Awaitable[None]]] = {
    "tree": tree_view,
    "reference": reference_view,
    "reader-search": reader_search_view,
    "expired-locator": expired_view,
    "stats": stats_view,
}
#: Views only the snapshot tests check (they show states, not features).
TEST_VIEWS: dict[str, Callable[..., Awaitable[None]]] = {**VIEWS, "help": help_view, "search-all": search_all_view}
