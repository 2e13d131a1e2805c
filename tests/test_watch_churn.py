"""Churn with real watchers: every operation on a root mixed with 10,000 artifact writes,
while `spillscope watch --json` (a subprocess) and the TUI (in process) both follow it.
At the end the folded event stream and the TUI tree equal the disk, and while the
root is missing the TUI status never says live."""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import threading
import time
from pathlib import Path

from spillscope.frontends.tui.app import SpillscopeApp
from test_watch import WatchProcess, fold, on_disk

WRITES = 10_000
BLOCKS = 10


def tree_keys(app: SpillscopeApp) -> set[str]:
    """Every artifact the tree holds (a big root's sessions build leaves on expand;
    each session node holds the leaves it would show, built or not)."""
    tree = app.query_one("#tree")
    out: set[str] = set()
    for session in tree.root.children:
        out.update(d.key for d in session.data.obj["children"] if d.kind == "artifact")
    return out


def fill(root: Path, sessions: list[str], names: list[str]) -> None:
    for s in sessions:
        (root / s).mkdir(parents=True, exist_ok=True, mode=0o700)
    for i, n in enumerate(names):
        (root / sessions[i % len(sessions)] / n).write_text("prepared")


def exchange(a: Path, b: Path) -> None:
    """Swap two paths atomically: renameat2(RENAME_EXCHANGE) (Linux 3.15+, glibc 2.28+)."""
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    if libc.renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))


class Churn:
    """Runs in a thread: blocks of writes, each followed by one operation on the root."""

    def __init__(self, tmp: Path, app: SpillscopeApp, watch: WatchProcess) -> None:
        self.tmp, self.root, self.app, self.watch = tmp, tmp / "root", app, watch
        self.n = 0
        self.lied: list[str] = []  # status lines that said live while the root was missing
        self.error: BaseException | None = None

    def writes(self, count: int) -> None:
        dirs = sorted(p for p in self.root.iterdir() if p.name.startswith("session-"))
        made = []
        for _ in range(count):
            p = dirs[self.n % len(dirs)] / f"{self.n:012x}-bash.txt"
            p.write_text("x")
            made.append(p)
            if self.n % 3 == 0:
                made[len(made) // 2].unlink(missing_ok=True)
            self.n += 1

    def wait_missing(self) -> None:
        """Both followers must notice the root is gone before it comes back."""
        self.watch.wait_for(lambda e: e["event"] == "root-missing", timeout=20)
        end = time.monotonic() + 20
        while self.app.watch_state != "missing" and time.monotonic() < end:
            time.sleep(0.02)
        status = self.app.watch_status()
        if self.app.watch_state != "missing" or "live" in status:
            self.lied.append(status)

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self.error = exc

    def _run(self) -> None:
        root = self.root
        per = WRITES // BLOCKS
        ops = [
            lambda: os.rename(root / "session-000000000001", root / "session-0000000000a1"),  # session dir renamed
            lambda: (fill(root, ["session-0000000000b1"], ["b00000000001-grep.txt"]),
                     shutil.rmtree(root / "session-000000000002")),  # added and removed
            lambda: os.symlink("/", root / "session-000000000000" / "c00000000001-bash.txt"),  # symlink artifact
            self.renamed_away,
            self.replaced_by_rename,
            self.removed_and_recreated,
            self.symlink_then_file,
            lambda: (os.chmod(root, 0o500), os.chmod(root, 0o700)),  # permissions changed
            lambda: fill(root, ["session-0000000000b2"], ["b00000000002-grep.txt"]),
            lambda: None,
        ]
        for op in ops:
            self.writes(per)
            op()

    def renamed_away(self) -> None:
        os.rename(self.root, self.tmp / "away-1")
        fill(self.root, ["session-0000000000d1", "session-0000000000d2"], ["d00000000001-bash.txt"])

    def replaced_by_rename(self) -> None:
        fill(self.tmp / "next", ["session-0000000000e1", "session-0000000000e2"], ["e00000000001-bash.txt"])
        # One atomic rename(2) puts the other directory at the path (RENAME_EXCHANGE): the
        # path is never missing, so only its inode says the root was replaced. (Two renames,
        # away then onto, leave a gap a loaded machine's watcher may see as missing/restored.)
        exchange(self.tmp / "next", self.root)
        os.rename(self.tmp / "next", self.tmp / "away-2")

    def removed_and_recreated(self) -> None:
        shutil.rmtree(self.root)
        self.wait_missing()
        fill(self.root, ["session-0000000000f1", "session-0000000000f2"], ["f00000000001-bash.txt"])

    def symlink_then_file(self) -> None:
        os.rename(self.root, self.tmp / "away-3")
        os.symlink(self.tmp / "away-3", self.root)
        self.wait_missing()
        os.unlink(self.root)
        self.root.write_text("not a root")
        time.sleep(0.3)
        self.root.unlink()
        os.rename(self.tmp / "away-3", self.root)


async def test_churn_every_operation_with_10000_writes(tmp_path):
    root = tmp_path / "root"
    fill(root, [f"session-{i:012x}" for i in range(4)], [f"a{i:011x}-bash.txt" for i in range(20)])
    watch = WatchProcess(root, "--initial")
    app = SpillscopeApp(str(root), None)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            watch.wait_for(lambda e: e["event"] == "live", timeout=20)
            for _ in range(400):
                if app.verified and app.watch_state == "live":
                    break
                await pilot.pause(0.05)
            churn = Churn(tmp_path, app, watch)
            thread = threading.Thread(target=churn.run)
            thread.start()
            while thread.is_alive():
                await pilot.pause(0.05)
            assert churn.error is None, churn.error
            disk = on_disk(root)
            for _ in range(1200):  # up to a minute on a busy machine
                watch.drain()
                # Settled: the data, the verification, and the watch saying it follows again
                # (a watch restarted by a root operation says "starting" until it is up).
                if fold(watch.seen) == disk and tree_keys(app) == disk and app.verified and app.watch_state == "live":
                    break
                await pilot.pause(0.05)
            stream_diff = fold(watch.seen) ^ disk
            tree_diff = tree_keys(app) ^ disk
            status = app.watch_status()
    finally:
        code = watch.stop()
    assert churn.n == WRITES
    assert len(disk) > 1000  # replacements dropped the earlier blocks
    assert stream_diff == set(), sorted(stream_diff)[:10]
    assert tree_diff == set(), sorted(tree_diff)[:10]
    assert churn.lied == []
    assert status.startswith("● live")
    events = {e["event"] for e in watch.seen}
    assert {"root-missing", "root-restored", "root-replaced", "added", "deleted", "live"} <= events
    assert code == 0
    await asyncio.sleep(0)
