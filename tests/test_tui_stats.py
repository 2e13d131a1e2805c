"""The TUI's stats screen (`t`, or the palette): the numbers are ``stats``' own, the labels
are inert, and it follows the root while the app watches it (a real watcher)."""

from __future__ import annotations

from spillscope.frontends.demo import write_demo
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.stats import StatsScreen, _label, _steps, _unit
from spillscope.inspect.stats import dsh_stats
from test_tui import wait_for


async def test_t_opens_stats_with_the_cli_numbers_and_escape_closes_it(tmp_path):
    demo = write_demo(tmp_path / "demo")
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, StatsScreen) and app.screen.counts > 0, timeout=20)
        screen = app.screen
        expected = dsh_stats(demo.root, demo.logs)
        assert screen.stats is not None and screen.stats.totals == expected.totals
        text = screen.head
        assert f"{expected.totals.files} files" in text and "49.7 KiB" in text and "next sweep (30d): 0 files" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, StatsScreen), timeout=5)
        assert any(c.title.startswith("Stats") for c in app.get_system_commands(app.screen))


async def test_stats_follow_the_watched_root(tmp_path):
    demo = write_demo(tmp_path / "demo")
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified and app.watch_state == "live", timeout=20)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, StatsScreen) and app.screen.counts > 0, timeout=20)
        screen = app.screen
        before = screen.stats.totals
        session = next(p for p in demo.root.iterdir() if p.is_dir())
        (session / "abcabcabcabc-bash.txt").write_bytes(b"y" * 7000)
        await wait_for(pilot, lambda: screen.stats.totals.files == before.files + 1, timeout=20)
        assert screen.stats.totals.bytes == before.bytes + 7000


def test_chart_labels_are_inert_and_axes_round():
    assert "\x1b" not in _label("\x1b[31mred\x07") and "␛" in _label("\x1b[31mred")
    assert len(_label("x" * 100, 18)) == 18
    assert _unit(50873) == ("KiB", 1024.0, [0.0, 20.0, 40.0, 60.0])
    assert _steps(3) == [0.0, 1.0, 2.0, 3.0, 4.0]


async def test_o_orders_the_tree_by_size_then_age_and_nodes_show_bytes(tmp_path):
    from spillscope.frontends.format import human_size
    from spillscope.frontends.tui.widgets import BrowseTree

    import os
    import time

    demo = write_demo(tmp_path / "demo")
    sizes = {p.name: sum(f.lstat().st_size for f in p.iterdir()) for p in demo.root.iterdir()}
    oldest = max((p for p in demo.root.glob("*/*")), key=lambda p: (p.parent.name, p.name))  # not the largest session's
    os.utime(oldest, (time.time() - 10 * 86400,) * 2)
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        tree = app.query_one(BrowseTree)
        assert human_size(sum(sizes.values())) in tree.root.label.plain
        for node in tree.root.children:
            if node.data.key in sizes:
                assert human_size(sizes[node.data.key]) in node.label.plain
        names = [n.data.key for n in tree.root.children]
        assert names == sorted(names)
        await pilot.press("o")
        await wait_for(pilot, lambda: tree.order_by == "size", timeout=5)
        by_size = [sizes.get(n.data.key, 0) for n in tree.root.children]
        assert by_size == sorted(by_size, reverse=True) and by_size[0] > 0
        for node in tree.root.children:
            files = [d.obj.size for d in node.data.obj["children"] if d.kind == "artifact"]
            assert files == sorted(files, reverse=True)
        await pilot.press("o")
        await wait_for(pilot, lambda: tree.order_by == "age", timeout=5)
        assert tree.root.children[0].data.key == oldest.parent.name
        first = [d.obj.path for d in tree.root.children[0].data.obj["children"] if d.kind == "artifact"]
        assert first[0] == str(oldest)
        await pilot.press("o")
        await wait_for(pilot, lambda: tree.order_by == "name", timeout=5)
        assert [n.data.key for n in tree.root.children] == names


async def test_stats_screen_counts_the_findings_the_status_bar_lists_and_says_their_scope(tmp_path):
    """The demo's three findings (expired locator, orphan, unavailable snapshot) on both, and
    without logs the screen says no notice was checked rather than a bare "0 findings"."""
    demo = write_demo(tmp_path / "demo")
    for logs in (str(demo.logs), None):
        app = SpillscopeApp(str(demo.root), logs, watch=False)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: app.verified, timeout=20)
            await pilot.press("t")
            await wait_for(pilot, lambda: isinstance(app.screen, StatsScreen) and app.screen.counts > 0, timeout=20)
            screen = app.screen
            if logs is not None:
                assert screen.stats.totals.findings == len(app.inspection.findings) == 3
                assert "3 findings" in screen.head and "findings from the scan and the logs" in screen.head
            else:
                assert "no notice checked: no session logs given" in screen.head
