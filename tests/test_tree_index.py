"""The tree's findings index (BrowseTree._index) after a watch's patch is exactly what a
rebuild from the shown findings gives (same keys, same findings in the same order),
though a patch only moves the findings that left or came (issue 13)."""

from __future__ import annotations

import os

from spillscope.frontends.demo import write_demo
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.widgets import BrowseTree
from spillscope.inspect.findings import by_location
from spillscope.inspect.watch.events import ChangeEvent
from test_tui import wait_for


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(len(a[k]) == len(b[k]) and all(x is y for x, y in zip(a[k], b[k])) for k in a)


async def test_the_index_after_patches_equals_a_rebuild(tmp_path):
    demo = write_demo(tmp_path / "demo")
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=10)
        tree = app.query_one(BrowseTree)
        sessions = sorted(p for p in demo.root.iterdir() if p.is_dir())
        made: list[str] = []
        for step in range(12):
            session = sessions[step % len(sessions)]
            if step % 3 == 2 and made:
                path = made.pop(0)
                os.unlink(path)
                event = "deleted"
            else:
                path = str(session / f"{0xabc000 + step:012x}-bash.txt")
                with open(path, "w") as f:
                    f.write("x")
                os.chmod(path, 0o666 if step % 2 else 0o600)  # 0o666: an insecure-permissions finding
                made.append(path)
                event = "added"
            before = app.patches
            app.apply_watch_batch([ChangeEvent(event, path, session.name, "tool-output")])
            assert app.patches == before + 1
            assert any(f.path == path for f in app.inspection.findings) == (event == "added" and step % 2 == 1)
            assert _same(tree._index, by_location(app.inspection.findings))
        # A pass's result (new finding objects throughout) is indexed again from scratch.
        app.rescan()
        await wait_for(pilot, lambda: app.verified and app._unverified_since is None, timeout=10)
        assert _same(tree._index, by_location(app.inspection.findings))
