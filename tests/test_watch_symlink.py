"""watch over a root holding symlinks to its own parent, named like an artifact and like
a session dir (issue #12, class 7): each is reported, never followed, and never stops
the watch from reporting what is created afterwards."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time


def _reader(proc: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.put(line)


def _wait_for(lines: queue.Queue[str], seen: list[dict], want: set[tuple[str, str]], deadline: float) -> None:
    """Read events until every (event, path) in ``want`` has come (a deadline, not a timing)."""
    while not want <= {(e["event"], e["path"]) for e in seen} and time.monotonic() < deadline:
        try:
            seen.append(json.loads(lines.get(timeout=0.5)))
        except queue.Empty:
            pass


def test_watch_reports_symlinks_and_keeps_watching(tmp_path):
    root = tmp_path / "root"
    sdir = root / "session-000000000001"
    sdir.mkdir(parents=True)
    (sdir / "000000000001-bash.txt").write_text("x")
    (tmp_path / "outside-000000000009-bash.txt").write_text("outside")
    link_art = sdir / "aaaaaaaaaaaa-bash.txt"
    os.symlink(tmp_path, link_art)  # the root's parent, named like an artifact
    link_dir = root / "session-00000000000f"
    os.symlink(tmp_path, link_dir)  # the root's parent, named like a session dir
    proc = subprocess.Popen([sys.executable, "-m", "spillscope", "watch", str(root), "--json", "--initial"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_reader, args=(proc, lines), daemon=True).start()
    seen: list[dict] = []
    try:
        _wait_for(lines, seen, {("added", str(link_art)), ("added", str(link_dir))}, time.monotonic() + 60)
        time.sleep(1.0)  # let the OS watch start (a recursive one walked the parent here)
        new_art = sdir / "000000000002-bash.txt"
        new_art.write_text("y")
        new_dir = root / "session-000000000002"
        new_dir.mkdir()
        in_new_dir = new_dir / "000000000003-bash.txt"
        in_new_dir.write_text("z")
        late_link = sdir / "bbbbbbbbbbbb-bash.txt"
        os.symlink(tmp_path, late_link)
        want = {("added", str(new_art)), ("added", str(in_new_dir)), ("added", str(late_link))}
        _wait_for(lines, seen, want, time.monotonic() + 60)
        # And the new session dir is watched too: a file created in it later is reported.
        later = new_dir / "000000000004-bash.txt"
        later.write_text("w")
        _wait_for(lines, seen, {("added", str(later))}, time.monotonic() + 60)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    got = {(e["event"], e["path"]) for e in seen}
    assert {("added", str(link_art)), ("added", str(link_dir))} | want | {("added", str(later))} <= got, seen
    # Nothing behind a symlink was followed: every event is the root's own entry.
    # (The watch's own status events, such as "live", name the root itself.)
    artifact_events = [e for e in seen if e["event"] in ("added", "modified", "deleted")]
    assert all(e["path"].startswith(str(root) + "/") and "outside" not in e["path"] for e in artifact_events), seen
    assert all(e["path"] == str(root) for e in seen if e not in artifact_events), seen
    assert not [e for e in seen if e["path"].startswith(str(link_dir) + "/")], seen
