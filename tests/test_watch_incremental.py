"""The TUI applies a watch's changes to the tree at once, path by path (inspect/livepatch),
without a pass over the whole root; the verification pass follows and ends equal to the
disk. A root path replaced by a symlink while the TUI is open never shows the target."""

from __future__ import annotations

import os
import threading

from spillscope.frontends.demo import write_demo
from spillscope.inspect.watch import patch as livepatch
from spillscope.inspect.verify.inspection import inspect_root
from spillscope.inspect.watch.events import ChangeEvent
from spillscope.frontends.tui import app as app_mod
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.widgets import BrowseTree
from test_tui import status_text, wait_for
from test_watch import on_disk
from test_watch_tui import artifact_keys


class GatedPasses:
    """inspect_root for the app, counted; once closed, a pass's result is held back
    until a token is released for it (its view of the disk is taken before)."""

    def __init__(self) -> None:
        self.started = 0
        self.computed = 0
        self.finished = 0
        self.open = True
        self.tokens = threading.Semaphore(0)

    def __call__(self, *args, **kwargs):
        self.started += 1
        try:
            result = inspect_root(*args, **kwargs)
            self.computed += 1
            if not self.open:
                self.tokens.acquire(timeout=60)
            return result
        finally:
            self.finished += 1

    def close(self) -> None:
        self.open = False

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self.tokens.release()

    def open_all(self) -> None:
        self.open = True
        self.release(100)


async def test_a_new_or_deleted_artifact_shows_without_a_pass_over_the_root(tmp_path, monkeypatch):
    demo = write_demo(tmp_path / "demo")
    passes = GatedPasses()
    monkeypatch.setattr(app_mod, "inspect_root", passes)
    rebuilt = {"n": 0}
    populate = BrowseTree.populate

    def counted(self, *args, **kwargs):
        rebuilt["n"] += 1
        return populate(self, *args, **kwargs)

    monkeypatch.setattr(BrowseTree, "populate", counted)
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified and app.watch_state == "live", timeout=20)
        passes.close()  # from here no pass over the root can finish
        finished = passes.finished
        rebuilt["n"] = 0
        session = next(p for p in demo.root.iterdir() if p.is_dir())
        new = session / "abcabcabcabc-bash.txt"
        new.write_text("new")
        await wait_for(pilot, lambda: str(new) in artifact_keys(app), timeout=10)
        assert passes.finished == finished and app.patches >= 1
        # Truthful meanwhile: the tree is not verified, and says so.
        assert not app.verified and "verifying" in status_text(app)
        old = next(k for k in sorted(on_disk(demo.root)) if k != str(new))
        os.unlink(old)
        await wait_for(pilot, lambda: old not in artifact_keys(app), timeout=10)
        assert passes.finished == finished
        assert artifact_keys(app) == on_disk(demo.root)
        # Only the session dir's node was rebuilt, not the whole tree.
        assert rebuilt["n"] == 0
        # The verification follows once the gate opens, and ends equal to the disk.
        passes.open_all()
        await wait_for(pilot, lambda: app.verified and passes.finished > finished, timeout=20)
        assert artifact_keys(app) == on_disk(demo.root)
        assert "● live" in status_text(app) and "verifying" not in status_text(app)


async def test_without_live_patch_the_same_change_waits_for_a_pass(tmp_path, monkeypatch):
    # The control for the test above: it can fail (the node comes only from a pass).
    demo = write_demo(tmp_path / "demo")
    passes = GatedPasses()
    monkeypatch.setattr(app_mod, "inspect_root", passes)
    monkeypatch.setattr(SpillscopeApp, "live_patch", False)
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified and app.watch_state == "live", timeout=20)
        # No pass in flight when the gate closes: one started by the watch's first events
        # (late on a loaded machine) would hold the gate, and the change's pass queue behind it.
        await wait_for(pilot, lambda: passes.started == passes.finished, timeout=20)
        await pilot.pause(0.3)
        await wait_for(pilot, lambda: passes.started == passes.finished, timeout=20)
        passes.close()
        started = passes.started
        session = next(p for p in demo.root.iterdir() if p.is_dir())
        new = session / "abcabcabcabc-bash.txt"
        new.write_text("new")
        await wait_for(pilot, lambda: passes.started > started, timeout=10)
        await pilot.pause(0.5)
        assert str(new) not in artifact_keys(app) and app.patches == 0
        passes.open_all()
        await wait_for(pilot, lambda: str(new) in artifact_keys(app), timeout=20)


async def test_a_pass_that_ran_during_changes_is_brought_up_to_date(tmp_path, monkeypatch):
    # A verification that looked at the disk before a change must not put the old view back.
    demo = write_demo(tmp_path / "demo")
    passes = GatedPasses()
    monkeypatch.setattr(app_mod, "inspect_root", passes)
    monkeypatch.setattr(SpillscopeApp, "verify_settle", 0.0)
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified and app.watch_state == "live", timeout=20)
        session = next(p for p in demo.root.iterdir() if p.is_dir())
        first = session / "111111111111-bash.txt"
        passes.close()
        computed = passes.computed
        first.write_text("1")
        await wait_for(pilot, lambda: passes.computed > computed, timeout=10)  # it has looked, and waits
        second = session / "222222222222-bash.txt"
        second.write_text("2")  # after that pass looked: it cannot know this file
        await wait_for(pilot, lambda: str(second) in artifact_keys(app), timeout=10)
        finished = passes.finished
        passes.release(1)  # that pass only; any later one waits
        await wait_for(pilot, lambda: passes.finished > finished, timeout=20)
        await pilot.pause(0.3)
        # Its result is shown with the later change applied on top, and not called verified.
        assert passes.finished == finished + 1
        assert str(first) in artifact_keys(app) and str(second) in artifact_keys(app)
        assert not app.verified
        passes.open_all()
        await wait_for(pilot, lambda: app.verified and artifact_keys(app) == on_disk(demo.root), timeout=20)


async def test_a_root_replaced_by_a_symlink_shows_nothing_of_its_target(tmp_path):
    demo = write_demo(tmp_path / "demo")
    root = demo.root
    other = tmp_path / "other"
    (other / "session-0000000000aa").mkdir(parents=True, mode=0o700)
    (other / "session-0000000000aa" / "aaaaaaaaaaaa-bash.txt").write_text("the target's")
    app = SpillscopeApp(str(root), str(demo.logs))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified and app.watch_state == "live", timeout=20)
        before = on_disk(root)
        assert artifact_keys(app) == before
        os.rename(root, tmp_path / "away")
        os.symlink(other, root)
        await wait_for(pilot, lambda: app.watch_state == "missing", timeout=10)
        await wait_for(pilot, lambda: app.verified, timeout=20)
        await pilot.pause(0.5)
        # Reported, not followed: nothing of the target (which is reachable through the path).
        assert os.path.exists(root / "session-0000000000aa" / "aaaaaaaaaaaa-bash.txt")
        assert artifact_keys(app) == set()
        assert not any(s.data.key == "session-0000000000aa" for s in app.query_one("#tree").root.children)
        assert "ROOT MISSING" in status_text(app) and "symlink" in status_text(app)
        # r rescans now: still nothing followed.
        await pilot.press("r")
        await wait_for(pilot, lambda: app.verified, timeout=20)
        assert artifact_keys(app) == set()
        # Put back: followed again, equal to the disk.
        os.unlink(root)
        os.rename(tmp_path / "away", root)
        await wait_for(pilot, lambda: app.watch_state == "live" and app.verified and artifact_keys(app) == before,
                       timeout=20)


def test_apply_events_never_looks_through_a_symlinked_root(tmp_path):
    root = tmp_path / "root"
    sdir = root / "session-000000000001"
    sdir.mkdir(parents=True)
    (sdir / "000000000001-bash.txt").write_text("x")
    ins = inspect_root(root, check_content=False)
    os.rename(root, tmp_path / "away")
    os.symlink(tmp_path / "away", root)
    event = ChangeEvent("added", str(sdir / "000000000002-bash.txt"), sdir.name, "tool-output")
    (tmp_path / "away" / sdir.name / "000000000002-bash.txt").write_text("y")
    patched, changed = livepatch.apply_events(ins, [event])
    assert patched.scan.sessions == [] and not patched.scan.exists
    assert str(sdir / "000000000001-bash.txt") in changed
    assert any(f.code == "unreadable" and "symlink" in f.detail for f in patched.findings)
    assert ins.scan.sessions  # the original is not modified


def test_apply_events_ends_equal_to_a_fresh_scan_through_random_operations(tmp_path):
    # The class, not the example: random creations, rewrites, deletions, symlinks and
    # non-files in session dirs, session dirs made and removed; after each round, the
    # events' paths applied to the last view equal a fresh scan (names, sizes, kinds, and
    # the lstat findings).
    import random
    import shutil

    rng = random.Random(13)
    root = tmp_path / "root"
    root.mkdir()
    dirs = [root / f"session-{i:012x}" for i in range(6)]
    ins = inspect_root(root, check_content=False)

    def view(i):
        arts = {(a.path, a.size, a.kind, a.is_symlink, a.is_regular) for a in i.scan.artifacts()}
        found = {(f.code, f.path) for f in i.findings if f.code in ("symlink", "unexpected-entry", "insecure-permissions")}
        return {s.name for s in i.scan.sessions}, arts, found

    for _ in range(40):
        touched: list[str] = []
        for _ in range(rng.randrange(1, 30)):
            d = rng.choice(dirs)
            op = rng.random()
            if not d.exists():
                d.mkdir(mode=0o700)
                continue
            files = sorted(d.iterdir())
            if op < 0.05:
                touched += [str(p) for p in files]
                shutil.rmtree(d)
            elif op < 0.5 or not files:
                p = d / f"{rng.randrange(16**12):012x}-{rng.choice(['bash.txt', 'session-reference-1.txt', 'x'])}"
                kind = rng.random()
                if kind < 0.8:
                    p.write_text("x" * rng.randrange(100))
                    p.chmod(rng.choice([0o600, 0o644]))
                elif kind < 0.9:
                    os.symlink("/", p)
                else:
                    p.mkdir()
                touched.append(str(p))
            elif op < 0.75:
                p = rng.choice(files)
                if p.is_file() and not p.is_symlink():
                    p.write_text("y" * rng.randrange(200))
                    touched.append(str(p))
            else:
                p = rng.choice(files)
                if p.is_dir() and not p.is_symlink():
                    p.rmdir()
                else:
                    p.unlink()
                touched.append(str(p))
        events = [ChangeEvent("modified", p, None, None) for p in touched]
        ins, _ = livepatch.apply_events(ins, events)
        fresh = inspect_root(root, check_content=False)
        # An empty session dir made or removed without an event is the full pass's to see.
        names, arts, found = view(ins)
        f_names, f_arts, f_found = view(fresh)
        assert arts == f_arts
        assert found == f_found
        assert {n for n in f_names if any(a[0].startswith(str(root / n) + "/") for a in f_arts)} <= names
        assert not any(a[0].startswith(str(root / n) + "/") for n in names - f_names for a in arts)


def session_keys(app: SpillscopeApp) -> list[str]:
    return [n.data.key for n in app.query_one(BrowseTree).root.children]


def expected_sessions(ins) -> list[str]:
    """What a fresh tree would show: every session dir, and every session a log names."""
    from spillscope.spill.naming import session_dir_name

    named = {session_dir_name(link.entry.target_session) for link in [*ins.references, *ins.tool_spills]}
    return sorted({s.name for s in ins.scan.sessions} | named)


async def test_session_dirs_added_removed_renamed_are_patched_in_place(tmp_path, monkeypatch):
    # A session dir that comes, goes or is renamed changes only its own node, and a
    # verification's result redraws only what it changed: no whole-tree rebuild (on a big
    # root each one held the interface while changes kept coming).
    demo = write_demo(tmp_path / "demo")
    passes = GatedPasses()
    monkeypatch.setattr(app_mod, "inspect_root", passes)
    rebuilt = {"n": 0}
    populate = BrowseTree.populate

    def counted(self, *args, **kwargs):
        rebuilt["n"] += 1
        return populate(self, *args, **kwargs)

    monkeypatch.setattr(BrowseTree, "populate", counted)
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified and app.watch_state == "live", timeout=20)
        passes.close()
        finished = passes.finished
        rebuilt["n"] = 0
        root = demo.root
        existing = sorted(p for p in root.iterdir() if p.is_dir() and any(p.iterdir()))
        new = root / "session-00000000fff0"
        new.mkdir(mode=0o700)
        (new / "abcabcabcabc-bash.txt").write_text("new")
        (new / "abcabcabcabd-bash.txt").write_text("new")
        renamed = root / "session-00000000fff1"
        os.rename(existing[0], renamed)
        (root / "session-000000000001").mkdir(mode=0o700)  # sorts first: added before the others
        (root / "session-000000000001" / "abcabcabcabe-bash.txt").write_text("first")
        await wait_for(pilot, lambda: artifact_keys(app) == on_disk(root), timeout=10)
        assert passes.finished == finished  # shown from the events, no pass over the root
        keys = session_keys(app)
        assert keys == sorted(keys)
        assert {"session-00000000fff0", "session-00000000fff1", "session-000000000001"} <= set(keys)
        # Removed: its node goes (the demo's logs name every original dir, so use a new one).
        for p in new.iterdir():
            p.unlink()
        new.rmdir()
        await wait_for(pilot, lambda: "session-00000000fff0" not in session_keys(app), timeout=10)
        assert artifact_keys(app) == on_disk(root)
        assert rebuilt["n"] == 0
        # The verification follows: its result is applied to the nodes, not rebuilt, and the
        # tree ends as a fresh one would be.
        passes.open_all()
        await wait_for(pilot, lambda: app.verified and passes.finished > finished, timeout=20)
        await pilot.pause(0.3)
        assert rebuilt["n"] == 0
        fresh = inspect_root(root, demo.logs, check_content=False)
        assert artifact_keys(app) == on_disk(root)
        assert session_keys(app) == expected_sessions(fresh)
        assert "● live" in status_text(app) and "verifying" not in status_text(app)


def test_changed_sessions_names_what_differs(tmp_path):
    root = tmp_path / "root"
    for i in range(3):
        (root / f"session-{i:012x}").mkdir(parents=True, mode=0o700)
        (root / f"session-{i:012x}" / f"{i:012x}-bash.txt").write_text("x")
    before = inspect_root(root, check_content=False)
    assert livepatch.changed_sessions(before, inspect_root(root, check_content=False)) == set()
    (root / "session-000000000001" / "aaaaaaaaaaaa-bash.txt").write_text("y")  # an artifact added
    os.chmod(root / "session-000000000002" / "000000000002-bash.txt", 0o600)  # its mode (and its finding)
    os.rename(root / "session-000000000000", root / "session-0000000000ff")  # a dir renamed
    after = inspect_root(root, check_content=False)
    assert livepatch.changed_sessions(before, after) == {
        "session-000000000001", "session-000000000002", "session-000000000000", "session-0000000000ff"}
    os.rename(root, tmp_path / "away")
    assert livepatch.changed_sessions(after, inspect_root(root, check_content=False)) is None
