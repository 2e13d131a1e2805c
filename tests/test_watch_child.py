"""The watch in a child process (inspect.watch_child), as the TUI runs it: a child that
dies or stops answering makes the status stale (never "● live"), `r` starts a new one,
and the child never outlives its parent, however the parent ends."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from spillscope.frontends.demo import write_demo
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.inspect.watch.child import awatch_root_child
from procs import alive, children, cmdline
from test_tui import status_text, wait_for
from test_watch_tui import artifact_keys


def _watch_children(pid: int) -> list[int]:
    return [p for p in children(pid) if b"spillscope.inspect.watch.child" in cmdline(p)]


def _gone_within(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


async def _agone_within(pid: int, seconds: float) -> bool:
    """The same, letting the loop run (the app's workers end on it)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_a_killed_watch_child_is_stale_with_its_reason_and_r_starts_another(tmp_path):
    demo = write_demo(tmp_path / "demo")
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.watch_state == "live", timeout=10)
        (child,) = _watch_children(os.getpid())
        os.kill(child, signal.SIGKILL)
        await wait_for(pilot, lambda: app.watch_state == "stale", timeout=5)
        status = status_text(app)
        assert "live" not in status and "the watch process ended (exit status -9)" in status
        assert "r rescans and restarts the watch" in status
        await pilot.press("r")
        await wait_for(pilot, lambda: app.watch_state == "live", timeout=10)
        assert "● live" in status_text(app)
        (again,) = _watch_children(os.getpid())
        assert again != child
        session = next(p for p in demo.root.iterdir() if p.is_dir())
        new = session / "defdefdefdef-bash.txt"
        new.write_text("x")
        await wait_for(pilot, lambda: str(new) in artifact_keys(app), timeout=5)
    assert await _agone_within(again, 5), "the watch child outlived the app"


async def test_a_child_that_stops_answering_is_stale_until_it_answers_again(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    agen = awatch_root_child(str(root), stall_after=1.0)
    try:
        first = await asyncio.wait_for(agen.__anext__(), 10)
        assert [ev.event for ev in first] == ["live"]
        (child,) = _watch_children(os.getpid())
        os.kill(child, signal.SIGSTOP)
        try:
            stalled = await asyncio.wait_for(agen.__anext__(), 5)
            assert [ev.event for ev in stalled] == ["stale"]
            assert "has not answered for 1 s" in (stalled[0].detail or "")
        finally:
            os.kill(child, signal.SIGCONT)
        back = await asyncio.wait_for(agen.__anext__(), 5)
        assert back[-1].event == "live"
    finally:
        await agen.aclose()
    assert await _agone_within(child, 5)


PARENT = r'''
import asyncio, sys
from spillscope.inspect.watch.child import awatch_root_child
async def main():
    async for batch in awatch_root_child(sys.argv[1]):
        print("ready", flush=True)
asyncio.run(main())
'''


def test_the_child_does_not_outlive_a_killed_parent(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "ready"
        (child,) = _watch_children(parent.pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        assert _gone_within(child, 5), "the watch child outlived its killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()


async def test_a_child_that_cannot_start_is_stale_with_the_reason(tmp_path, monkeypatch):
    # Out of processes or descriptors: a stale event saying so, not an exception that takes
    # the TUI's worker (and with it the app) down.
    def refuse(*args, **kwargs):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    batches = [b async for b in awatch_root_child(tmp_path)]
    assert [[(ev.event, ev.path) for ev in b] for b in batches] == [[("stale", str(tmp_path))]]
    assert "could not start" in batches[0][0].detail and "Too many open files" in batches[0][0].detail


async def test_the_child_does_not_import_from_the_working_directory(tmp_path, monkeypatch):
    # A json.py where the user stands must not shadow the standard library in the child.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "json.py").write_text("raise SystemExit('shadowed json imported')\n")
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.chdir(cwd)
    gen = awatch_root_child(root)
    try:
        (root / "session-0123456789ab").mkdir()
        batch = await asyncio.wait_for(gen.__anext__(), 20)
        assert not any(ev.event == "stale" for ev in batch), batch
    finally:
        await gen.aclose()


STUCK_CHILD = r'''
import sys, time
from spillscope.inspect.watch import child as watch_child, events as watch_events, state as watch_state
watch_events.Watcher.round_limit = 1.0
stuck_after = time.monotonic() + float(sys.argv[2])
check = watch_state.RootState.check
def hanging_check(self):
    # What an lstat on a hung file system does: never return (the loop is stuck in it).
    if time.monotonic() > stuck_after:
        time.sleep(3600)
    return check(self)
watch_state.RootState.check = hanging_check
watch_child._child([sys.argv[1]])
'''


def _heartbeat_times(root: Path, stuck_after: float, seconds: float) -> list[float]:
    """When the child's lines came, over ``seconds``, with its loop stuck after ``stuck_after``."""
    proc = subprocess.Popen([sys.executable, "-c", STUCK_CHILD, str(root), str(stuck_after)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    times: list[float] = []
    t0 = time.monotonic()
    try:
        assert proc.stdout is not None
        os.set_blocking(proc.stdout.fileno(), False)
        while time.monotonic() - t0 < seconds:
            try:
                chunk = proc.stdout.read()
            except BlockingIOError:
                chunk = None
            if chunk:
                times += [time.monotonic() - t0] * chunk.count(b"\n")
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    return times


def test_a_watch_loop_stuck_in_a_system_call_stops_the_heartbeats(tmp_path):
    """The heartbeat says the watch goes round, not that its process lives: a loop stuck
    (a hung file system) falls silent after its round_limit, so the parent says stale."""
    root = tmp_path / "root"
    root.mkdir()
    times = _heartbeat_times(root, 1.5, 6.0)
    assert any(t < 2.0 for t in times), times  # it answered while the loop went round
    assert times and max(times) < 1.5 + 1.0 + 1.5, times  # then silence, a round_limit later
    control = _heartbeat_times(root, 3600, 4.0)  # the same child, never stuck: it keeps beating
    assert max(control) > 3.0, control
