#!/usr/bin/env python3
"""spillscope benchmarks, each against a baseline measured in the same run.

    python bench/run.py            # full sizes (200 MB, 100k artifacts, 1 GB)
    python bench/run.py --quick    # small sizes, a smoke run

Prints one line per measurement and a ratio against its baseline; results are recorded
in docs/benchmarks.md together with this command.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gen import write_transcript, write_wide_root  # noqa: E402


# Peak RSS of this process in KiB. (ru_maxrss would include the parent's RSS at fork.)
HWM = "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"


class Null(io.TextIOBase):
    def write(self, s: str) -> int:
        return len(s)

    def isatty(self) -> bool:
        return False


def timed(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def report(name: str, seconds: float, baseline: float, size: int | None = None, target: str = "") -> dict:
    ratio = seconds / baseline if baseline else float("nan")
    rate = f"  {size / seconds / 1e6:8.1f} MB/s" if size else ""
    print(f"{name:<44} {seconds:8.3f} s{rate}   {ratio:5.2f}x baseline  {target}")
    return {"name": name, "seconds": seconds, "baseline": baseline, "ratio": ratio}


def bench_transcript(tmp: Path, size: int) -> None:
    from spillscope.frontends.cli.main import cmd_cat
    from spillscope.formats.transcript import TranscriptIndex, read_transcript

    path = tmp / "big-session-reference-1.txt"
    n = write_transcript(path, size)
    print(f"\n== transcript of {n / 1e6:.0f} MB ==")

    def baseline() -> None:
        with open(path, "rb") as f:
            for line in f:
                if line[:1] == b'"':
                    orjson.loads(line)

    # What `spillscope cat PATH --json` runs, output thrown away.
    args = argparse.Namespace(artifact=str(path), json=True, message=None, raw=False, max_line_bytes=1 << 20, timeout=None)
    # The target's two sides alternate (best of 3 each), so a slow spell of the machine
    # lands on both rather than on one.
    base = cat = float("inf")
    for _ in range(3):
        base = min(base, timed(baseline))
        cat = min(cat, timed(lambda: cmd_cat(args, Null())))
    report("baseline: raw read + orjson.loads per line", base, base, n)
    report("read_transcript (exact texts in memory)", timed(lambda: read_transcript(path)), base, n)
    report("TranscriptIndex.build (lazy index)", timed(lambda: TranscriptIndex.build(path), 2), base, n, "target: any")
    report("cat --json", cat, base, n, f"target >= 50% of baseline speed: {'PASS' if base / cat >= 0.5 else 'FAIL'}")
    path.unlink()


def bare_walk(root: Path) -> None:
    """The baseline of every listing: each session dir listed, each entry ``lstat``'ed."""
    for d in os.scandir(root):
        os.lstat(d.path)
        for f in os.scandir(d.path):
            f.stat(follow_symlinks=False)


def bench_ls(tmp: Path, dirs: int, per_dir: int) -> None:
    from spillscope.inspect.scan.listing import listing_json

    root = tmp / "wide"
    count = write_wide_root(root, dirs, per_dir)
    print(f"\n== ls over {count} artifacts in {dirs} session dirs ==")

    def baseline() -> None:
        bare_walk(root)

    def ours() -> None:
        # What `spillscope ls ROOT --json` runs (workers on a wide root).
        Null().write(listing_json(str(root), time.time()))

    base = timed(baseline, 3)
    report("baseline: os.scandir + lstat walk", base, base)
    t = timed(ours, 3)
    report("ls --json (scan, findings, JSON)", t, base, None, f"target <= 1.5x: {'PASS' if t / base <= 1.5 else 'FAIL'}")
    one = timed(lambda: Null().write(listing_json(str(root), time.time(), workers=1)), 3)
    report("  the same in one process (for reference)", one, base)
    # End to end, as a user runs it: interpreter start-up and imports on both sides.
    walk = ("import os, sys\nfor d in os.scandir(sys.argv[1]):\n    os.lstat(d.path)\n"
            "    for f in os.scandir(d.path): f.stat(follow_symlinks=False)")
    cli = [str(Path(sys.executable).with_name("spillscope")), "ls", str(root), "--json"]
    if not Path(cli[0]).exists():
        cli = [sys.executable, "-m", "spillscope", "ls", str(root), "--json"]
    with open(os.devnull, "w") as null:
        sub_base = timed(lambda: subprocess.run([sys.executable, "-c", walk, str(root)], check=True), 3)
        sub = timed(lambda: subprocess.run(cli, stdout=null, check=True), 3)
    report("baseline: the same walk as a python script", sub_base, sub_base)
    report("`spillscope ls ROOT --json > /dev/null`", sub, sub_base)
    shutil.rmtree(root)


def bench_stats(tmp: Path, sessions: int, per_dir: int) -> None:
    """``stats`` over a root of many sessions against the same bare walk as ``ls``; and its
    peak RSS in a fresh process at a tenth and at the whole of the sessions (it may grow
    with sessions -- one counter each -- never with files)."""
    from spillscope.inspect.stats import dsh_stats

    root = tmp / "stats-wide"
    count = write_wide_root(root, sessions, per_dir)
    print(f"\n== stats over {sessions} sessions, {count} files ==  (load {os.getloadavg()[0]:.2f})")

    base = stats = float("inf")
    for _ in range(3):  # alternate, so a slow spell of the machine lands on both sides
        base = min(base, timed(lambda: bare_walk(root)))
        stats = min(stats, timed(lambda: dsh_stats(str(root))))
    report("baseline: os.scandir + lstat walk", base, base)
    report("stats (walk, fold, sweep forecast)", stats, base, None,
           f"target <= 1.5x: {'PASS' if stats / base <= 1.5 else 'FAIL'}")
    report("  the same in one process (for reference)", timed(lambda: dsh_stats(str(root), workers=1)), base)
    # CPU time (user + system) of each side in this process: on a loaded machine the wall
    # clock measures the other processes as much as ours.
    import resource

    def cpu(fn) -> float:
        best = float("inf")
        for _ in range(2):
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            fn()
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            best = min(best, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        return best

    cpu_base = cpu(lambda: bare_walk(root))
    report("baseline: the walk's CPU time", cpu_base, cpu_base)
    report("stats' CPU time in one process", cpu(lambda: dsh_stats(str(root), workers=1)), cpu_base)
    probe = ("import sys\nfrom spillscope.inspect.stats import dsh_stats\n"
             f"s = dsh_stats(sys.argv[1])\nprint(len(s.sessions), {HWM})")
    small = tmp / "stats-tenth"
    write_wide_root(small, max(1, sessions // 10), per_dir)
    for label, path in (("a tenth", small), ("all", root)):
        out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True)
        n, hwm = out.stdout.split()
        print(f"  peak RSS of stats over {label} ({n} sessions): {int(hwm) / 1024:.1f} MB (load {os.getloadavg()[0]:.2f})")
    shutil.rmtree(root)
    shutil.rmtree(small)


def bench_verify_rss(tmp: Path, total: int) -> None:
    root = tmp / "verify-root"
    sdir = root / "session-000000000000"
    sdir.mkdir(parents=True, mode=0o700)
    parts = 4
    for i in range(parts):
        write_transcript(sdir / f"{i:012x}-session-reference-{i + 1}.txt", total // parts)
    size = sum(p.stat().st_size for p in sdir.iterdir())
    print(f"\n== verify over {size / 1e9:.2f} GB of transcripts ==")
    code = ("import sys; from spillscope.frontends.cli.main import main; rc=main(['verify', sys.argv[1], '--json']);"
            "print(" + HWM + ", file=sys.stderr)")
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    rss_mb = int(proc.stderr.strip().splitlines()[-1]) / 1024
    base = timed(lambda: subprocess.run([sys.executable, "-c", "import spillscope.frontends.cli.main"], check=True))
    print(f"{'verify (subprocess)':<44} {elapsed:8.3f} s  {size / elapsed / 1e6:8.1f} MB/s   exit {proc.returncode}")
    print(f"{'peak RSS of verify':<44} {rss_mb:8.1f} MB   (interpreter start-up alone: {base:.2f} s)  "
          f"target < 200 MB: {'PASS' if rss_mb < 200 else 'FAIL'}")
    shutil.rmtree(root)


TTFS = r'''
import asyncio, sys, time
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.screens import ReaderScreen
from spillscope.frontends.tui.textview import TextView

async def main(root):
    app = SpillscopeApp(root, None, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.verified:
            await pilot.pause(0.01)
        tree = app.query_one("#tree")
        node = tree.root.children[0].children[0]
        while tree.cursor_node is not node:
            tree.move_cursor(node); await pilot.pause(0.01)
        t = time.perf_counter()
        app.open_reader(node.data)
        while not (isinstance(app.screen, ReaderScreen) and app.screen.query(TextView)
                   and app.screen.query_one(TextView).lines):
            await pilot.pause(0.005)
        ttfs = time.perf_counter() - t
        view = app.screen.query_one(TextView)
        doc = app.screen.document
        # The background worker finishes the index while the first screen is up.
        t = time.perf_counter()
        while not doc.done:
            await pilot.pause(0.01)
        indexed = time.perf_counter() - t
        # Then a jump to the middle of the message is a pread of one window.
        t = time.perf_counter()
        view.scroll_to_offset(doc.messages[0].code_points // 2)
        await pilot.pause(0)
        jump = time.perf_counter() - t
        assert abs(view.top_offset - doc.messages[0].code_points // 2) < 200, view.top_offset
        await pilot.pause(0.5)
        print(ttfs, jump, indexed, int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]))

asyncio.run(main(sys.argv[1]))
'''


def bench_ttfs(tmp: Path, big: int) -> None:
    print(f"\n== TUI: time to first screen, 1 MB vs {big / 1e9:.2f} GB single-message transcript ==")
    results = {}
    for label, size in (("1 MB", 1 << 20), ("big", big)):
        root = tmp / f"ttfs-{label.replace(' ', '')}"
        sdir = root / "session-000000000000"
        sdir.mkdir(parents=True, mode=0o700)
        write_transcript(sdir / "000000000001-session-reference-1.txt", size)
        runs = []
        for _ in range(3):
            out = subprocess.run([sys.executable, "-c", TTFS, str(root)], capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"TTFS run failed:\n{out.stderr[-3000:]}")
            ttfs, jump, indexed, rss = out.stdout.split()
            runs.append((float(ttfs), float(jump), int(rss) / 1024, float(indexed)))
        results[label] = (statistics.median(r[0] for r in runs), max(r[1] for r in runs), max(r[2] for r in runs),
                          statistics.median(r[3] for r in runs))
        shutil.rmtree(root)
    small, large = results["1 MB"], results["big"]
    print(f"{'first screen, 1 MB':<44} {small[0] * 1000:8.1f} ms   peak RSS {small[2]:6.1f} MB")
    print(f"{'first screen, big':<44} {large[0] * 1000:8.1f} ms   peak RSS {large[2]:6.1f} MB   "
          f"{large[0] / small[0]:5.2f}x the 1 MB time  target <= 1.5x: {'PASS' if large[0] / small[0] <= 1.5 else 'FAIL'}")
    print(f"{'background index of big (UI stays live)':<44} {large[3]:8.3f} s")
    print(f"{'then a jump to the middle of big':<44} {large[1] * 1000:8.1f} ms")
    print(f"{'memory with the big transcript open':<44} {large[2]:8.1f} MB   target < 300 MB: {'PASS' if large[2] < 300 else 'FAIL'}")


LATENCY = r'''
import asyncio, os, statistics, sys, time
from spillscope.frontends.tui.app import SpillscopeApp

async def main(root):
    app = SpillscopeApp(root, None)
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.verified:
            await pilot.pause(0.01)
        await pilot.pause(0.5)
        tree = app.query_one("#tree")
        def keys():
            out, stack = set(), [tree.root]
            while stack:
                n = stack.pop(); stack.extend(n.children)
                if n.data is not None: out.add(n.data.key)
            return out
        lat = []
        for i in range(15):
            path = os.path.join(root, "session-000000000000", f"{i:012x}-bash.txt")
            t = time.perf_counter()
            with open(path, "w") as f: f.write("x")
            while path not in keys():
                await pilot.pause(0.005)
            lat.append(time.perf_counter() - t)
            await pilot.pause(0.15)
        print(statistics.median(lat), max(lat))

asyncio.run(main(sys.argv[1]))
'''


def bench_watch(tmp: Path) -> None:
    print("\n== TUI: live watch latency, write → visible node ==")
    root = tmp / "watch-root"
    (root / "session-000000000000").mkdir(parents=True, mode=0o700)
    out = subprocess.run([sys.executable, "-c", LATENCY, str(root)], capture_output=True, text=True, check=True)
    median, worst = map(float, out.stdout.split())
    print(f"{'median latency (15 files)':<44} {median * 1000:8.1f} ms   worst {worst * 1000:.1f} ms   "
          f"target median < 500 ms: {'PASS' if median < 0.5 else 'FAIL'}")
    shutil.rmtree(root)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    p.add_argument("--only", choices=["transcript", "ls", "stats", "verify", "ttfs", "watch"], action="append")
    args = p.parse_args()
    quick = args.quick
    only = set(args.only or ["transcript", "ls", "stats", "verify", "ttfs", "watch"])
    print(f"spillscope benchmarks  python {sys.version.split()[0]}  cpus {os.cpu_count()}  "
          f"{'quick' if quick else 'full'} sizes")
    with tempfile.TemporaryDirectory(prefix="spillscope-bench-") as d:
        tmp = Path(d)
        if "transcript" in only:
            bench_transcript(tmp, (20 if quick else 200) << 20)
        if "ls" in only:
            bench_ls(tmp, 100 if quick else 1000, 100)
        if "stats" in only:
            bench_stats(tmp, 10_000 if quick else 100_000, 2)
        if "verify" in only:
            bench_verify_rss(tmp, (100 if quick else 1024) << 20)
        if "ttfs" in only:
            bench_ttfs(tmp, (50 if quick else 1024) << 20)
        if "watch" in only:
            bench_watch(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
