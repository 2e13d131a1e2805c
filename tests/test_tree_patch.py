"""A watch's patch changes the tree in place, child by child (issue 13): random runs of
artifacts added, deleted, renamed and chmod-ed, session dirs made, renamed and removed,
applied batch by batch through the app's patch, leave a tree equal to a fresh populate
of the same inspection after every batch (the sessions in order, their labels, children
and, where built, their leaves), and a leaf whose artifact did not change keeps its node."""

from __future__ import annotations

import os
import random
import shutil
import types

import pytest

from spillscope.frontends.demo import write_demo
from spillscope.frontends.tui import tree as tree_mod
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.widgets import BrowseTree
from spillscope.inspect.watch.events import ChangeEvent
from test_tui import wait_for
from test_watch import on_disk

#: Ages in labels are drawn against this clock (a real one could turn "59s" into "1m"
#: between the patched tree and its reference).
NOW = 2_000_000_000.0


def _session(node) -> tuple:
    data = node.data
    return (data.key, node._label.plain, node.allow_expand,
            [(d.kind, d.key, d.obj) for d in data.obj["children"]])


def _leaves(tree: BrowseTree, node) -> list[tuple]:
    return [(leaf.data.kind, leaf.data.key, leaf.data.obj, leaf._label.plain) for leaf in node.children]


def _expected_leaves(ref: BrowseTree, node) -> list[tuple]:
    return [(d.kind, d.key, d.obj, ref._label(d).plain) for d in node.data.obj["children"]]


def assert_like_a_fresh_populate(app: SpillscopeApp) -> None:
    tree = app.query_one(BrowseTree)
    ref = BrowseTree()  # never mounted: only its nodes are compared
    ref.populate(app.inspection)
    assert tree.root._label.plain == ref.root._label.plain
    assert [_session(n) for n in tree.root.children] == [_session(n) for n in ref.root.children]
    for node, fresh in zip(tree.root.children, ref.root.children):
        if node.data.obj.get("built"):
            assert _leaves(tree, node) == _expected_leaves(ref, fresh), node.data.key
        else:
            assert not node.children


def _name(rng: random.Random) -> str:
    # Hex names land anywhere in a session's sorted list; a few sort before or after all.
    return rng.choice([f"{rng.randrange(16 ** 12):012x}-bash.txt", f"{rng.randrange(16 ** 12):012x}-notes.txt",
                       "000000000000-first.txt", "zzz-last.txt", f"odd name {rng.randrange(99)}.txt"])


def _files(root) -> list[str]:
    return sorted(on_disk(root))


def _sessions(root) -> list[str]:
    return sorted(e.path for e in os.scandir(root) if e.is_dir(follow_symlinks=False) and e.name.startswith("session-"))


def _step(rng: random.Random, root) -> list[ChangeEvent]:
    """One random change on disk, and the events a watch would give for it."""
    sessions, files = _sessions(root), _files(root)
    op = rng.choice(["add", "add", "add", "delete", "delete", "rename", "move", "chmod", "new-dir",
                     "rename-dir", "remove-dir", "burst"])
    ev: list[tuple[str, str]] = []

    def add(d: str) -> None:
        path = os.path.join(d, _name(rng))
        with open(path, "w") as f:
            f.write("x" * rng.randrange(3000))
        os.utime(path, (NOW - 7200, NOW - 7200))
        ev.append(("added", path))

    if op == "add" or not files and op in ("delete", "rename", "move", "chmod"):
        add(rng.choice(sessions))
    elif op == "burst":
        for _ in range(rng.randrange(2, 12)):
            if files and rng.random() < 0.4:
                path = files.pop(rng.randrange(len(files)))
                os.unlink(path)
                ev.append(("deleted", path))
            else:
                add(rng.choice(sessions))
    elif op == "delete":
        path = rng.choice(files)
        os.unlink(path)
        ev.append(("deleted", path))
    elif op in ("rename", "move"):
        path = rng.choice(files)
        d = os.path.dirname(path) if op == "rename" else rng.choice(sessions)
        new = os.path.join(d, _name(rng))
        os.rename(path, new)
        ev += [("deleted", path), ("added", new)]
    elif op == "chmod":
        path = rng.choice(files)
        os.chmod(path, rng.choice([0o600, 0o644, 0o666]))  # 0o666: an insecure-permissions finding
        ev.append(("modified", path))
    elif op == "new-dir":
        d = os.path.join(root, f"session-{rng.randrange(16 ** 12):012x}")
        os.mkdir(d, 0o700)
        ev.append(("added", d))
        for _ in range(rng.randrange(4)):
            add(d)
    elif op == "rename-dir":
        d = rng.choice(sessions)
        new = os.path.join(root, f"session-{rng.randrange(16 ** 12):012x}")
        inside = [e.name for e in os.scandir(d)]
        os.rename(d, new)
        ev += [("deleted", os.path.join(d, n)) for n in inside] + [("added", os.path.join(new, n)) for n in inside]
    else:  # remove-dir
        d = rng.choice(sessions)
        inside = [e.path for e in os.scandir(d)]
        shutil.rmtree(d)
        ev += [("deleted", p) for p in inside] + [("deleted", d)]
    return [ChangeEvent(kind, path, None, None) for kind, path in ev]  # type: ignore[arg-type]


@pytest.mark.parametrize("lazy", [False, True], ids=["all-built", "lazy"])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_patches_give_the_tree_a_fresh_populate_gives(tmp_path, monkeypatch, seed, lazy):
    monkeypatch.setattr(tree_mod, "time", types.SimpleNamespace(time=lambda: NOW))
    if lazy:  # sessions collapsed and their leaves built only once opened
        monkeypatch.setattr(BrowseTree, "LAZY_LIMIT", 0)
    demo = write_demo(tmp_path / "demo", fixed_time=NOW - 3600)
    rng = random.Random(seed)
    for i in range(3):  # more sessions, with more artifacts, beside the demo's
        d = demo.root / f"session-{0xabc000000000 + i:012x}"
        d.mkdir(mode=0o700)
        for _ in range(12):
            p = d / _name(rng)
            p.write_text("y")
            os.utime(p, (NOW - 7200, NOW - 7200))
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=10)
        tree = app.query_one(BrowseTree)
        assert_like_a_fresh_populate(app)
        patched = 0
        for step in range(40):
            if lazy and step % 10 == 3:  # open a session, as a user would: its leaves are built
                closed = [n for n in tree.root.children if not n.is_expanded and n.allow_expand]
                if closed:
                    rng.choice(closed).expand()
                    await pilot.pause()
            events = _step(rng, demo.root)
            loads = app.loads
            app.apply_watch_batch(events)
            patched += app.loads - loads  # not all: a chmod to the same mode, an empty new dir
            assert_like_a_fresh_populate(app)
        assert patched >= 30
        shown = {d.key for n in tree.root.children for d in n.data.obj["children"] if d.kind == "artifact"}
        assert shown == on_disk(demo.root)


async def test_a_patch_keeps_the_nodes_of_leaves_it_did_not_change(tmp_path, monkeypatch):
    monkeypatch.setattr(tree_mod, "time", types.SimpleNamespace(time=lambda: NOW))
    demo = write_demo(tmp_path / "demo", fixed_time=NOW - 3600)
    d = demo.root / "session-abc000000000"
    d.mkdir(mode=0o700)
    for i in range(20):
        (d / f"{0x100 + 2 * i:012x}-bash.txt").write_text("y")
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=10)
        tree = app.query_one(BrowseTree)
        session = next(n for n in tree.root.children if n.data.key == d.name)
        before = {leaf.data.key: leaf for leaf in session.children}
        assert len(before) == 20
        # The cursor on a leaf below the change stays on that leaf.
        below = before[str(d / f"{0x100 + 2 * 15:012x}-bash.txt")]
        tree.move_cursor(below)
        await pilot.pause()
        new = d / f"{0x100 + 2 * 5 + 1:012x}-bash.txt"  # sorts between the 6th and the 7th
        new.write_text("z")
        gone = d / f"{0x100 + 2 * 9:012x}-bash.txt"
        gone.unlink()
        app.apply_watch_batch([ChangeEvent("added", str(new), None, None), ChangeEvent("deleted", str(gone), None, None)])
        after = {leaf.data.key: leaf for leaf in session.children}
        assert [leaf.data.key for leaf in session.children] == sorted(after)
        assert str(new) in after and str(gone) not in after
        assert all(after[k] is node for k, node in before.items() if k != str(gone))
        await pilot.pause()
        assert tree.cursor_node is below
        assert_like_a_fresh_populate(app)
