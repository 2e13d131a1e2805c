"""The live watch with a real watcher (watchfiles on this machine's file system): the root
followed by its path through every operation, the event stream folded equal to the disk,
status events, and the `watch` command's start-up and signal behaviour."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

import pytest

import nobody

from spillscope.inspect.watch import root as watch_mod
from spillscope.inspect.watch.events import STATUS_EVENTS, ChangeEvent
from spillscope.inspect.watch.root import watch_root

SESSION_A = "session-aaaaaaaaaaaa"
SESSION_B = "session-bbbbbbbbbbbb"


def fold(events: Iterable[dict]) -> set[str]:
    """What a consumer of the stream believes is on disk."""
    files: set[str] = set()
    for e in events:
        if e["event"] in ("added", "modified"):
            files.add(e["path"])
        elif e["event"] == "deleted":
            files.discard(e["path"])
    return files


def on_disk(root: Path) -> set[str]:
    """Every entry of every session dir (symlinks included, never followed)."""
    if root.is_symlink() or not root.is_dir():
        return set()
    out = set()
    for d in os.scandir(root):
        if d.name.startswith("session-") and len(d.name) == 20 and d.is_dir(follow_symlinks=False):
            out.update(e.path for e in os.scandir(d.path))
    return out


class EventStream:
    """Watch events (JSON dicts) arriving on a queue: ``seen`` keeps every one taken."""

    def __init__(self) -> None:
        self.events: queue.Queue[dict] = queue.Queue()
        self.seen: list[dict] = []

    def drain(self) -> None:
        while True:
            try:
                self.seen.append(self.events.get_nowait())
            except queue.Empty:
                return

    def wait_for(self, pred: Callable[[dict], bool], timeout: float = 10.0) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                ev = self.events.get(timeout=0.05)
            except queue.Empty:
                continue
            self.seen.append(ev)
            if pred(ev):
                return ev
        raise AssertionError(f"event not seen; last events {self.seen[-20:]}")


class InProcess(EventStream):
    """watch_root in a thread, its events as JSON dicts in a queue."""

    def __init__(self, root: Path, **kwargs) -> None:
        super().__init__()
        self.stop = threading.Event()
        self.error: BaseException | None = None

        def run() -> None:
            try:
                for batch in watch_root(root, stop=self.stop, **kwargs):
                    for ev in batch:
                        self.events.put(ev.to_json())
            except BaseException as exc:  # pragma: no cover - reported by the test
                self.error = exc

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def settle(self, root: Path, timeout: float = 15.0) -> set[str]:
        """Wait until the folded stream equals the disk; return the difference."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.drain()
            if fold(self.seen) == on_disk(root):
                break
            time.sleep(0.05)
        return fold(self.seen) ^ on_disk(root)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive()
        assert self.error is None, self.error


def _mkroot(root: Path, session: str = SESSION_A, names: Iterable[str] = ("111111111111-bash.txt",)) -> None:
    (root / session).mkdir(parents=True, mode=0o700)
    for n in names:
        (root / session / n).write_text("x")


def test_root_followed_by_path_through_every_operation(tmp_path):
    root = tmp_path / "root"
    _mkroot(root)
    w = InProcess(root, initial=True)
    try:
        w.wait_for(lambda e: e["event"] == "live")
        # Renamed away: everything deleted, then root-missing.
        os.rename(root, tmp_path / "away")
        w.wait_for(lambda e: e["event"] == "root-missing" and e["detail"] == "does not exist")
        assert fold(w.seen) == set()
        # Another directory renamed onto the path: restored with its content.
        _mkroot(tmp_path / "other", SESSION_B, ["222222222222-grep.txt"])
        os.rename(tmp_path / "other", root)
        w.wait_for(lambda e: e["event"] == "root-restored")
        w.wait_for(lambda e: e["event"] == "live")
        assert w.settle(root) == set()
        # Swapped for another directory in one go (two renames): root-replaced + the difference.
        os.rename(root, tmp_path / "other")
        os.rename(tmp_path / "away", root)
        w.wait_for(lambda e: e["event"] in ("root-replaced", "root-restored"))
        assert w.settle(root) == set() and fold(w.seen) == {str(root / SESSION_A / "111111111111-bash.txt")}
        # A symlink at the path: reported, not followed (its target has artifacts).
        os.rename(root, tmp_path / "away")
        os.symlink(tmp_path / "away", root)
        w.wait_for(lambda e: e["event"] == "root-missing" and "symlink" in (e.get("detail") or ""))
        assert fold(w.seen) == set()
        # Then a file.
        os.unlink(root)
        root.write_text("not a root")
        w.wait_for(lambda e: e["event"] == "root-missing" and e.get("detail") == "is not a directory")
        # Then a directory again, filled after it appeared.
        root.unlink()
        root.mkdir()
        w.wait_for(lambda e: e["event"] == "root-restored")
        w.wait_for(lambda e: e["event"] == "live")
        _mkroot(root, SESSION_A, ["333333333333-bash.txt"])
        w.wait_for(lambda e: e["event"] == "added" and e["path"].endswith("333333333333-bash.txt"))
        # Session dirs renamed, added and removed inside the root.
        os.rename(root / SESSION_A, root / SESSION_B)
        w.wait_for(lambda e: e["event"] == "added" and e["session"] == SESSION_B)
        assert w.settle(root) == set()
        _mkroot(root, "session-cccccccccccc", ["444444444444-bash.txt"])
        w.wait_for(lambda e: e["path"].endswith("444444444444-bash.txt"))
        shutil.rmtree(root / SESSION_B)
        w.wait_for(lambda e: e["event"] == "deleted" and e["session"] == SESSION_B)
        assert w.settle(root) == set()
        # Removed and recreated.
        shutil.rmtree(root)
        w.wait_for(lambda e: e["event"] == "root-missing")
        _mkroot(root, SESSION_A, ["555555555555-bash.txt"])
        w.wait_for(lambda e: e["event"] == "added" and e["path"].endswith("555555555555-bash.txt"))
        assert w.settle(root) == set()
    finally:
        w.close()
    statuses = [e["event"] for e in w.seen if e["event"] in STATUS_EVENTS]
    assert statuses[0] == "live"


def test_a_symlink_named_like_an_artifact_is_reported_and_the_watch_goes_on(tmp_path):
    root = tmp_path / "root"
    _mkroot(root)
    w = InProcess(root, initial=True)
    try:
        w.wait_for(lambda e: e["event"] == "live")
        link = root / SESSION_A / "666666666666-bash.txt"
        os.symlink("/", link)  # a directory: following it would walk the machine
        ev = w.wait_for(lambda e: e["path"] == str(link))
        assert ev["event"] == "added" and ev["kind"] == "tool-output"
        nested = root / SESSION_A / "777777777777-bash.txt"
        nested.mkdir()  # a directory named like an artifact: reported, nothing below it followed
        (nested / "deep.txt").write_text("x")
        w.wait_for(lambda e: e["path"] == str(nested))
        after = root / SESSION_A / "888888888888-bash.txt"
        after.write_text("y")
        w.wait_for(lambda e: e["path"] == str(after))
        assert not any(e["path"].startswith(str(nested) + os.sep) for e in w.seen)
        assert w.settle(root) == set()
    finally:
        w.close()


def test_a_failing_file_watcher_is_reported_stale_polled_and_recovers(tmp_path, monkeypatch):
    from spillscope.inspect.watch import local as watch_local

    real = watch_local._os_watch
    failures = {"left": 2}

    def flaky(*args, **kwargs):
        if failures["left"]:
            failures["left"] -= 1
            raise OSError(28, "OS file watch limit reached")
        return real(*args, **kwargs)

    monkeypatch.setattr(watch_local, "_os_watch", flaky)
    root = tmp_path / "root"
    _mkroot(root)
    w = InProcess(root, initial=True)
    try:
        stale = w.wait_for(lambda e: e["event"] in ("stale", "live"))
        assert stale["event"] == "stale" and "watch limit" in stale["detail"]
        # While stale, changes are still picked up by polling.
        (root / SESSION_A / "999999999999-bash.txt").write_text("z")
        w.wait_for(lambda e: e["path"].endswith("999999999999-bash.txt"))
        w.wait_for(lambda e: e["event"] == "live")
        assert w.settle(root) == set()
    finally:
        w.close()


def test_a_burst_and_missed_events_end_equal_to_the_disk(tmp_path, monkeypatch):
    # The OS watcher drops every event: the consistency check alone must catch up.
    from spillscope.inspect.watch import local as watch_local

    real = watch_local._os_watch

    def deaf(*args, **kwargs):
        for _ in real(*args, **kwargs):
            yield set()

    monkeypatch.setattr(watch_local, "_os_watch", deaf)
    root = tmp_path / "root"
    _mkroot(root)
    w = InProcess(root, initial=True)
    try:
        w.wait_for(lambda e: e["event"] == "live")
        for i in range(3000):
            (root / f"session-{i % 7:012x}").mkdir(exist_ok=True)
            (root / f"session-{i % 7:012x}" / f"{i:012x}-bash.txt").write_text("x")
            if i % 3 == 0:
                (root / f"session-{(i // 2) % 7:012x}" / f"{i // 2:012x}-bash.txt").unlink(missing_ok=True)
        assert w.settle(root) == set()
        assert len(on_disk(root)) > 1000
    finally:
        w.close()


def test_unreadable_root_is_stale_then_live():
    # root reads everything, so (as in CI, run as root) the watch itself runs as nobody,
    # on a root outside pytest's private (0700) tmp dir.
    import tempfile

    from conftest import SYSTEM_TMP

    base = Path(tempfile.mkdtemp(prefix="spillscope-test-", dir=SYSTEM_TMP))
    try:
        os.chmod(base, 0o777)
        root = base / "root"
        _mkroot(root)
        for p in (root, root / SESSION_A):
            os.chmod(p, 0o777)
        proc = WatchProcess(root, as_nobody=os.geteuid() == 0)
        try:
            proc.wait_for(lambda e: e["event"] == "live")
            os.chmod(root, 0o000)
            ev = proc.wait_for(lambda e: e["event"] == "stale")
            assert "Permission denied" in ev["detail"]
            assert not any(e["event"] == "deleted" for e in proc.seen)  # unreadable is not gone
            os.chmod(root, 0o777)
            proc.wait_for(lambda e: e["event"] == "live")
            (root / SESSION_A / "abababababab-bash.txt").write_text("x")
            proc.wait_for(lambda e: e["path"].endswith("abababababab-bash.txt"))
        finally:
            os.chmod(root, 0o777)
            assert proc.stop() == 0
    finally:
        shutil.rmtree(base)


class WatchProcess(EventStream):
    """`spillscope watch --json` in a subprocess, its events read in a thread; always stopped."""

    def __init__(self, root: Path, *extra: str, as_nobody: bool = False, ignore_sigint: bool = False) -> None:
        def ignore() -> None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # what `cmd &` does in a script

        args = ("watch", str(root), "--json", *extra)
        # As nobody: from a readable copy of the package (the checkout may be private).
        self.proc = subprocess.Popen(nobody.spillscope_cli(*args) if as_nobody else [sys.executable, "-m", "spillscope", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=nobody.env() if as_nobody else None,
                                     preexec_fn=ignore if ignore_sigint else None)
        super().__init__()
        threading.Thread(target=lambda: [self.events.put(json.loads(l)) for l in self.proc.stdout], daemon=True).start()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 5) -> int | None:
        """Signal and wait; kill (and return None) if it does not stop in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_watch_stops_promptly_on_signals_even_with_sigint_ignored(tmp_path, sig):
    root = tmp_path / "root"
    _mkroot(root)
    proc = WatchProcess(root, ignore_sigint=True)
    proc.wait_for(lambda e: e["event"] == "live")
    t0 = time.monotonic()
    code = proc.stop(sig)
    assert code == 0, "watch did not stop on the signal (killed)"
    assert time.monotonic() - t0 < 5


def test_watch_waits_for_a_root_that_does_not_exist_yet(tmp_path):
    root = tmp_path / "later" / "root"
    proc = WatchProcess(root)
    try:
        ev = proc.wait_for(lambda e: e["event"] == "root-missing")
        assert ev["detail"] == "does not exist"
        _mkroot(root)
        proc.wait_for(lambda e: e["event"] == "root-restored")
        proc.wait_for(lambda e: e["event"] == "added" and e["path"].endswith("111111111111-bash.txt"))
    finally:
        assert proc.stop() == 0


def test_watch_waiting_says_so_on_stderr(tmp_path):
    root = tmp_path / "nope"
    proc = subprocess.Popen([sys.executable, "-m", "spillscope", "watch", str(root)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        line = proc.stderr.readline().decode()
        first = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert line == f"spillscope: {root} does not exist yet; waiting for it to appear (Ctrl-C stops)\n"
    assert proc.returncode == 0
    assert b"root-missing" in first and b"(does not exist)" in first


@pytest.mark.parametrize("make", ["file", "symlink"])
def test_watch_on_a_file_or_symlink_exits_2(tmp_path, make):
    target = tmp_path / "target"
    _mkroot(target)
    path = tmp_path / "path"
    if make == "file":
        path.write_text("x")
    else:
        path.symlink_to(target)
    proc = subprocess.run([sys.executable, "-m", "spillscope", "watch", str(path), "--json"], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2 and proc.stdout == ""
    assert ("not a directory" if make == "file" else "is a symlink") in proc.stderr


def test_change_event_json_adds_detail_only_when_there_is_one():
    assert ChangeEvent("added", "/r/s/a", "s", "tool-output").to_json() == {
        "event": "added", "path": "/r/s/a", "session": "s", "kind": "tool-output"}
    assert ChangeEvent("stale", "/r", None, None, "why").to_json()["detail"] == "why"


def test_session_dirs_renamed_under_writes_move_the_watcher_without_relisting_the_root(tmp_path, monkeypatch):
    # A session dir renamed (or added, removed) moves the OS watcher to the new set of
    # dirs. The new watcher is up before the old one stops, so nothing is missed and only
    # the new dirs are listed again; a full listing of the root each time (every second
    # under churn) starved a busy app. Modifications too must all arrive: the watcher's
    # picture of every file (size, mtime) ends equal to the disk.
    from spillscope.inspect.watch.local import LocalWatcher
    from spillscope.inspect.watch.state import RootState

    full = {"n": 0}
    sync = RootState.sync

    def counted(self, only=None):
        if only is None:
            full["n"] += 1
        return sync(self, only)

    monkeypatch.setattr(RootState, "sync", counted)
    root = tmp_path / "root"
    for i in range(4):
        _mkroot(root, f"session-{i:012x}", [f"{i:012x}-bash.txt"])
    stop = threading.Event()
    watcher = LocalWatcher(str(root), stop=stop)
    seen: list[dict] = []
    thread = threading.Thread(target=lambda: [seen.extend(e.to_json() for e in b) for b in watcher.batches()], daemon=True)
    thread.start()
    try:
        end = time.monotonic() + 10
        while not any(e["event"] == "live" for e in list(seen)) and time.monotonic() < end:
            time.sleep(0.02)
        before = full["n"]
        moving = root / "session-000000000000"
        for n in range(20):
            target = root / f"session-0000000000f{n % 2}"
            os.rename(moving, target)
            moving = target
            for i in range(1, 4):
                p = root / f"session-{i:012x}" / f"{i:012x}-bash.txt"
                p.write_text("y" * (n + 2))  # a modification, its size changing each time
                (root / f"session-{i:012x}" / f"{n:010x}{i:02x}-bash.txt").write_text("new")
            time.sleep(0.05)
        end = time.monotonic() + 15
        while time.monotonic() < end and fold(list(seen)) != on_disk(root):
            time.sleep(0.05)
        time.sleep(0.5)
        assert fold(list(seen)) == on_disk(root)
        truth = {}
        for p in on_disk(root):
            st = os.lstat(p)
            truth[p] = (st.st_size, st.st_mtime_ns)
        assert watcher.state.files == truth
        assert full["n"] == before  # never the whole root again: only the dirs that were new
    finally:
        stop.set()
        thread.join(timeout=10)


async def test_awatch_hands_batches_that_queued_up_over_as_one(monkeypatch):
    # A caller busy with one batch (the TUI patching its tree) gets the batches that came
    # meanwhile in one, in order, instead of paying its per-batch cost for each.
    import asyncio

    go = threading.Event()

    def fake(root, **kwargs):
        go.wait(10)
        for i in range(3):
            yield [ChangeEvent("added", f"/r/session-000000000000/{i:012x}-bash.txt", None, None)]

    monkeypatch.setattr(watch_mod, "watch_root", fake)
    agen = watch_mod.awatch_root("/r")
    first = asyncio.ensure_future(agen.__anext__())
    await asyncio.sleep(0.05)  # the thread runs and waits for go
    go.set()
    time.sleep(0.3)  # the loop is busy: all three batches queue up meanwhile
    got = [await first]
    async for batch in agen:
        got.append(batch)
    assert len(got) == 1
    assert [ev.path.rsplit("/", 1)[1][:12] for ev in got[0]] == [f"{i:012x}" for i in range(3)]


def test_the_os_watcher_says_when_it_is_up_and_hands_over_without_waiting(tmp_path):
    # A watcher being replaced (a session dir came or went) must not hold changes back for
    # its grouping or its timeout: the new one says at once that it is up, and the old one
    # gives what it saw so far when asked. With a 60 s timeout, either would otherwise wait
    # for a change and its debounce, or for the timeout.
    from watchfiles import Change

    from spillscope.inspect.watch.local import _os_watch

    root = tmp_path / "root"
    _mkroot(root)
    stop = threading.Event()
    gen = _os_watch((str(root / SESSION_A),), stop, 60_000)
    try:
        began = time.monotonic()
        assert next(gen) == set()  # up, before any change
        new = root / SESSION_A / "222222222222-bash.txt"
        new.write_text("x")
        seen: set = set()
        while (Change.added, str(new)) not in seen and time.monotonic() - began < 30:
            seen |= gen.send(True)
        assert (Change.added, str(new)) in seen and time.monotonic() - began < 10
    finally:
        stop.set()
        gen.close()


def test_watch_json_lines_carry_an_iso_utc_timestamp(tmp_path):
    from datetime import datetime, timezone

    root = tmp_path / "root"
    _mkroot(root)
    before = datetime.now(timezone.utc).replace(microsecond=0)
    proc = WatchProcess(root, "--initial")
    try:
        ev = proc.wait_for(lambda e: e["event"] == "added")
        live = proc.wait_for(lambda e: e["event"] == "live")
    finally:
        assert proc.stop() == 0
    after = datetime.now(timezone.utc)
    for e in (ev, live):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["time"]), e
        assert before <= datetime.fromisoformat(e["time"].replace("Z", "+00:00")) <= after


def test_watch_table_lines_start_with_the_same_timestamp(tmp_path):
    root = tmp_path / "root"
    _mkroot(root)
    proc = subprocess.Popen([sys.executable, "-m", "spillscope", "watch", str(root), "--initial"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z  added ", first), first
