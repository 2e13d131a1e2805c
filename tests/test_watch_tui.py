"""The TUI's live view with a real watcher: a demo rewritten under an open TUI, the status
line's states, and a node whose file vanished."""

from __future__ import annotations

import os
import time

from spillscope.frontends.demo import write_demo
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.widgets import BrowseTree
from test_tui import find, nodes, select, status_text, wait_for
from test_watch import on_disk


def artifact_keys(app: SpillscopeApp) -> set[str]:
    tree = app.query_one(BrowseTree)
    out: set[str] = set()
    for session in tree.root.children:
        out.update(d.key for d in session.data.obj["children"] if d.kind == "artifact")
    return out


async def test_demo_rewritten_under_an_open_tui_is_followed(tmp_path):
    # The reported failure: `spillscope demo DIR --no-tui` run again and again under an
    # open TUI left deleted names in the tree, and new files never appeared.
    demo = write_demo(tmp_path / "demo")
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified and app.watch_state == "live", timeout=10)
        assert status_text(app).startswith("● live · r rescans  ·  ")
        for _ in range(4):
            write_demo(tmp_path / "demo")
            await pilot.pause(0.7)
        session = next(p for p in demo.root.iterdir() if p.is_dir())
        new = session / "abcabcabcabc-bash.txt"
        new.write_text("after the rewrites")
        await wait_for(pilot, lambda: str(new) in artifact_keys(app), timeout=5)
        await wait_for(pilot, lambda: artifact_keys(app) == on_disk(demo.root) and app.verified, timeout=10)
        assert app.watch_state == "live" and "● live" in status_text(app)
        # A node whose file vanishes leaves the tree within a second (well within 5 s here).
        t0 = time.monotonic()
        new.unlink()
        await wait_for(pilot, lambda: str(new) not in artifact_keys(app), timeout=5)
        assert time.monotonic() - t0 < 5


async def test_opening_a_vanished_artifact_says_so_plainly(tmp_path):
    demo = write_demo(tmp_path / "demo")
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)  # no watch: the tree is stale on purpose
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        tree.root.expand_all()
        await pilot.pause(0.1)
        node = find(tree, "artifact", lambda d: d.obj.kind == "tool-output")
        await select(pilot, tree, node)
        path = node.data.key
        os.unlink(path)
        await pilot.press("enter")
        await wait_for(pilot, lambda: any("is gone" in n.message for n in app._notifications))
        message = next(n.message for n in app._notifications if "is gone" in n.message)
        assert "deleted from the spill root" in message
        # …and the tree is brought up to date.
        await wait_for(pilot, lambda: not any(n.data and n.data.key == path for n in nodes(tree)))


async def test_status_is_stale_when_the_watch_stops_and_r_restarts_it(tmp_path, monkeypatch):
    from spillscope.inspect.watch import local as watch_local

    demo = write_demo(tmp_path / "demo")
    real = watch_local.LocalWatcher.batches
    broken = {"left": 1}

    def batches(self):
        if broken["left"]:
            broken["left"] -= 1
            raise RuntimeError("backend exploded")
        yield from real(self)

    monkeypatch.setattr(watch_local.LocalWatcher, "batches", batches)
    # The watcher in this process (a child's would not see the patch; a child that
    # dies is tests/test_watch_child.py's).
    monkeypatch.setattr(SpillscopeApp, "watch_in_child", False)
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.watch_state == "stale")
        status = status_text(app)
        assert "live" not in status and "stale since" in status and "backend exploded" in status
        assert "r rescans and restarts the watch" in status
        await pilot.press("r")
        await wait_for(pilot, lambda: app.watch_state == "live", timeout=10)
        assert "● live" in status_text(app)
        # Pause: never "live" while paused.
        await pilot.press("p")
        assert "live" not in status_text(app) and "PAUSED" in status_text(app)


async def test_a_root_given_as_a_symlink_is_watched_at_its_target(tmp_path):
    demo = write_demo(tmp_path / "demo")
    link = tmp_path / "link"
    link.symlink_to(demo.root)
    app = SpillscopeApp(str(link), str(demo.logs))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified and app.watch_state == "live", timeout=10)
        session = next(p for p in demo.root.iterdir() if p.is_dir())
        new = session / "defdefdefdef-bash.txt"
        new.write_text("x")
        await wait_for(pilot, lambda: any(k.endswith("defdefdefdef-bash.txt") for k in artifact_keys(app)), timeout=5)
        assert "● live" in status_text(app)
