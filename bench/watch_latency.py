#!/usr/bin/env python3
"""Live-watch latency: artifact write → `watch --json` event, and → visible TUI node,
idle and during churn, against raw watchfiles measured in the same run.

    python bench/watch_latency.py            # 200 samples per JSON case, 40 per TUI case
    python bench/watch_latency.py --quick    # fewer samples
    python bench/watch_latency.py --ab       # also the TUI without live_patch (every
                                             # change waits for a pass over the root)
    python bench/watch_latency.py --base-src /tmp/base/src   # also another checkout's TUI

Churn: a second process keeps writing and deleting artifacts in other session dirs
(about 1,000 operations a second, about 300 of its files on disk at any time) and
renames a session dir every second, on a root that holds 5,000 artifacts.
``--leaky-churn``: the churn as it was until 2026-12-03 16:00 UTC, which forgot the files
of the dir it renamed (never deleted): that dir grew by ~125 files a second for the whole
churn phase, so each case ran against a bigger dir renamed every second, and how big
depended on how long the cases before it took. Targets (issue 13): median < 200 ms, p99 < 1 s, in every
case. Results go in docs/benchmarks.md with this command.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
# The watcher's own grouping (debounce/step, ms), for the raw watchfiles baseline: 50/20
# until 2026-12-03 18:40 UTC, 25/10 since (docs/benchmarks.md).
try:
    from spillscope.inspect.watch.local import _DEBOUNCE_MS, _STEP_MS
except ImportError:  # a package from before they were named
    _DEBOUNCE_MS, _STEP_MS = 50, 20

CHURN = r'''
import os, sys, time
root = sys.argv[1]
LEAK = sys.argv[2:] == ["leak"]
dirs = [os.path.join(root, f"session-{i:012x}") for i in range(1, 9)]
for d in dirs:
    os.makedirs(d, exist_ok=True)
n, made, flip = 0, [], time.monotonic()
while True:
    d = dirs[n % len(dirs)]
    p = os.path.join(d, f"{n:012x}-churn.txt")
    try:
        with open(p, "w") as f:
            f.write("c")
        made.append(p)
        if len(made) > 300:
            os.unlink(made.pop(0))
    except OSError:
        pass  # its session dir is being renamed
    n += 1
    if time.monotonic() - flip > 1.0:
        flip = time.monotonic()
        a, b = dirs[0], dirs[0][:-1] + ("f" if dirs[0][-1] != "f" else "e")
        try:
            os.rename(a, b)
            dirs[0] = b
            if LEAK:
                made = [m for m in made if not m.startswith(a + os.sep)]
            else:
                made = [b + m[len(a):] if m.startswith(a + os.sep) else m for m in made]
        except OSError:
            pass
    time.sleep(0.001)
'''

TUI = r'''
import asyncio, os, sys, time
from spillscope.frontends.tui.app import SpillscopeApp

async def main(root, samples, live_patch):
    SpillscopeApp.live_patch = live_patch == "1"
    app = SpillscopeApp(root, None)
    async with app.run_test(size=(120, 40)) as pilot:
        while not (app.inspection is not None and app.watch_state == "live"):
            await pilot.pause(0.01)
        tree = app.query_one("#tree")
        def keys():
            # Only the session written to (a set of 5,000 keys every 5 ms would load the loop).
            for s in tree.root.children:
                if s.data.key.endswith("session-000000000000"):
                    return {d.key for d in s.data.obj["children"]}
            return set()
        out = []
        for i in range(samples):
            path = os.path.join(root, "session-000000000000", f"{i + 0xb0000000:012x}-bash.txt")
            t = time.perf_counter()
            with open(path, "w") as f:
                f.write("x")
            while path not in keys():
                await pilot.pause(0.005)
            out.append(time.perf_counter() - t)
            await pilot.pause(0.1)
        print(" ".join(f"{x:.6f}" for x in out))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
'''


def make_root(base: Path, artifacts: int) -> Path:
    root = base / "root"
    for i in range(10):
        (root / f"session-{i:012x}").mkdir(parents=True, mode=0o700, exist_ok=True)
    for i in range(artifacts):
        (root / f"session-{i % 10:012x}" / f"{i + 0xa0000000:012x}-bash.txt").write_text("x")
    return root


def stats(xs: list[float]) -> tuple[float, float, float]:
    xs = sorted(xs)
    p99 = xs[min(len(xs) - 1, int(round(0.99 * (len(xs) - 1))))]
    return statistics.median(xs), p99, xs[-1]


def json_latency(root: Path, samples: int, tag: int) -> list[float]:
    proc = subprocess.Popen([PY, "-m", "spillscope", "watch", str(root), "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    arrivals: queue.Queue[tuple[float, dict]] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            arrivals.put((time.perf_counter(), json.loads(line)))

    threading.Thread(target=read, daemon=True).start()
    try:
        while arrivals.get(timeout=30)[1]["event"] != "live":
            pass
        return _samples(root, samples, tag, lambda path: _wait(arrivals, path))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def raw_latency(root: Path, samples: int, tag: int) -> list[float]:
    """The baseline: watchfiles itself (recursive, same debounce/step), in this process."""
    import watchfiles

    arrivals: queue.Queue[tuple[float, dict]] = queue.Queue()
    stop = threading.Event()
    ready = threading.Event()

    def run() -> None:
        for changes in watchfiles.watch(root, stop_event=stop, debounce=_DEBOUNCE_MS, step=_STEP_MS, rust_timeout=100,
                                        yield_on_timeout=True):
            ready.set()
            now = time.perf_counter()
            for _, path in changes:
                arrivals.put((now, {"path": path, "event": "added"}))

    th = threading.Thread(target=run, daemon=True)
    th.start()
    ready.wait(10)
    try:
        return _samples(root, samples, tag, lambda path: _wait(arrivals, path))
    finally:
        stop.set()
        th.join(10)


def _wait(arrivals: queue.Queue[tuple[float, dict]], path: str) -> float:
    while True:
        at, ev = arrivals.get(timeout=30)
        if ev["path"] == path and ev["event"] == "added":
            return at


def _samples(root: Path, samples: int, tag: int, wait) -> list[float]:
    out = []
    for i in range(samples):
        path = str(root / "session-000000000000" / f"{tag + i:012x}-bash.txt")
        t = time.perf_counter()
        with open(path, "w") as f:
            f.write("x")
        out.append(wait(path) - t)
        time.sleep(0.02)
    return out


def tui_latency(root: Path, samples: int, live_patch: bool = True, src: str | None = None) -> list[float]:
    env = None if src is None else {**os.environ, "PYTHONPATH": src}  # another checkout's package
    out = subprocess.run([PY, "-c", TUI, str(root), str(samples), "1" if live_patch else "0"],
                         capture_output=True, text=True, timeout=900, env=env)
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    return [float(x) for x in out.stdout.split()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--ab", action="store_true", help="also measure the TUI without live_patch")
    ap.add_argument("--base-src", metavar="DIR", help="also measure the TUI of another checkout's src/ "
                    "(e.g. `git worktree add /tmp/base <commit>`: DIR=/tmp/base/src), in the same run")
    ap.add_argument("--leaky-churn", action="store_true", help="the churn as before 2026-12-03 16:00 UTC (see above)")
    args = ap.parse_args()
    n_json, n_tui = (50, 15) if args.quick else (200, 40)
    print(f"watch latency  python {sys.version.split()[0]}  cpus {os.cpu_count()}  "
          f"{n_json} JSON / {n_tui} TUI samples per case, 5000 artifacts in the root, "
          f"watchfiles debounce {_DEBOUNCE_MS} ms / step {_STEP_MS} ms"
          f"{'  (leaky churn)' if args.leaky_churn else ''}")
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="spillscope-bench-watch-") as d:
        root = make_root(Path(d), 5000)
        for churning in (False, True):
            churn = subprocess.Popen([PY, "-c", CHURN, str(root), *(["leak"] if args.leaky_churn else [])]) \
                if churning else None
            label = "churn" if churning else "idle"
            try:
                if churning:
                    time.sleep(1.0)
                tag = 0xc0000000 + (1 << 20 if churning else 0)
                results[f"raw watchfiles, {label}"] = raw_latency(root, n_json, tag)
                results[f"watch --json, {label}"] = json_latency(root, n_json, tag + (1 << 16))
                results[f"TUI node, {label}"] = tui_latency(root, n_tui)
                if args.ab:
                    for p in (root / "session-000000000000").glob("0000b*-bash.txt"):
                        p.unlink()  # the same names again: new files, not modified ones
                    results[f"TUI node (no patch), {label}"] = tui_latency(root, n_tui, live_patch=False)
                if args.base_src:
                    for p in (root / "session-000000000000").glob("0000b*-bash.txt"):
                        p.unlink()
                    results[f"TUI node (base), {label}"] = tui_latency(root, n_tui, src=args.base_src)
            finally:
                if churn is not None:
                    churn.terminate()
                    churn.wait()
            # The TUI names its files from 0xb0000000: clear them for the next case.
            for p in (root / "session-000000000000").glob("0000b*-bash.txt"):
                p.unlink()
        shutil.rmtree(root)
    ok = True
    for label, xs in results.items():
        med, p99, worst = stats(xs)
        base = results[label.replace("watch --json", "raw watchfiles").replace("TUI node (no patch)", "raw watchfiles")
                       .replace("TUI node (base)", "raw watchfiles")
                       .replace("TUI node", "raw watchfiles")]
        ratio = med / statistics.median(base)
        target = "" if label.startswith("raw") or "(" in label else (
            "  PASS" if med < 0.2 and p99 < 1.0 else "  FAIL")
        ok &= target != "  FAIL"
        print(f"{label:<32} median {med * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms  worst {worst * 1000:7.1f} ms  "
              f"{ratio:5.2f}x raw{target}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
