#!/usr/bin/env python3
"""Before/after: the same commands on two source trees, as fresh processes, interleaved.

    git archive REV src | tar -x -C /tmp/before      # the tree to compare against
    cp src/spillscope/_native*.so /tmp/before/src/spillscope/   # the same accelerator
    python bench/ab.py --before /tmp/before/src [--rounds 15]

For a change whose cost is import time or what a command loads (a refactor, a move): on a
shared machine a whole ``bench/run.py`` per side cannot separate the two, so each round runs
every command once per side, alternating which side goes first, and prints min and median.
"after" is this checkout's ``src``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gen import write_transcript, write_wide_root  # noqa: E402

HWM = "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the src dir of the tree to compare against")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    sides = {"before": str(Path(args.before).resolve()), "after": str(HERE.parent / "src")}
    with tempfile.TemporaryDirectory() as tmp:
        wide, vroot = Path(tmp) / "wide", Path(tmp) / "verify"
        write_wide_root(wide, 100, 100)
        sdir = vroot / "session-000000000000"
        sdir.mkdir(parents=True, mode=0o700)
        for i in range(4):
            write_transcript(sdir / f"{i:012x}-session-reference-{i + 1}.txt", 25_000_000)
        first = sdir / "000000000000-session-reference-1.txt"
        jobs = {
            "import spillscope.frontends.cli.main": ["-c", "import spillscope.frontends.cli.main"],
            "ls ROOT --json (100 x 100)": ["-m", "spillscope", "ls", str(wide), "--json"],
            "verify ROOT --json (4 x 25 MB)": ["-c", "import sys; from spillscope.frontends.cli.main import main; "
                                               "main(['verify', sys.argv[1], '--json']); print(" + HWM + ", file=sys.stderr)",
                                               str(vroot)],
            "cat --json (25 MB)": ["-m", "spillscope", "cat", str(first), "--json"],
        }
        times: dict[tuple[str, str], list[float]] = {(j, s): [] for j in jobs for s in sides}
        rss: dict[str, list[float]] = {s: [] for s in sides}
        for i in range(args.rounds):
            order = list(sides.items()) if i % 2 == 0 else list(reversed(sides.items()))
            for job, argv in jobs.items():
                for side, path in order:
                    env = dict(os.environ, PYTHONPATH=path)
                    env.pop("PYTHONDONTWRITEBYTECODE", None)  # no user compiles the CLI on every run
                    t = time.perf_counter()
                    out = subprocess.run([sys.executable, *argv], env=env, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, text=True)
                    times[(job, side)].append(time.perf_counter() - t)
                    if job.startswith("verify"):
                        rss[side].append(int(out.stderr.strip().splitlines()[-1]) / 1024)
    print(f"{os.uname().nodename}  cpus {os.cpu_count()}  load {os.getloadavg()[0]:.1f}  rounds {args.rounds}")
    print(f"{'command':<40} {'before min / median':>20} {'after min / median':>20}   after/before")
    for job in jobs:
        b, a = times[(job, "before")], times[(job, "after")]
        print(f"{job:<40} {min(b):8.3f} / {statistics.median(b):7.3f} s {min(a):8.3f} / {statistics.median(a):7.3f} s"
              f"   {min(a) / min(b):4.2f}x / {statistics.median(a) / statistics.median(b):4.2f}x")
    print(f"{'peak RSS of verify (median)':<40} {statistics.median(rss['before']):14.1f} MB {statistics.median(rss['after']):17.1f} MB")


if __name__ == "__main__":
    main()
