"""Expiry sweep at scale: `prune`'s dry run and the `past-retention` forecast vs a plain scan.

    python bench/sweep.py [--dirs 1000] [--files 100]

Builds a root of DIRS session dirs x FILES empty files (every other one 40 days old) in a
temp dir, then times, best of 3 and interleaved so a slow spell lands on both sides:
the inspector's ``scan_root`` (the baseline: scandir + lstat of every entry), the sweep's
dry run (what ``prune`` lists), ``inspect_root`` without and with ``--retention 30d`` (the
forecast), and finally one real sweep deleting half the files. Prints same-run ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from spillscope.inspect.scan.tree import scan_root  # noqa: E402
from spillscope.inspect.verify.inspection import inspect_root  # noqa: E402
from spillscope.spill.sweep import MS_PER_DAY, SweepRoot, cutoff_ms, sweep_spill_roots  # noqa: E402


def build(root: Path, dirs: int, files: int) -> None:
    root.mkdir(mode=0o700)
    old = time.time() - 40 * 86400
    for d in range(dirs):
        sd = root / f"session-{d:012x}"
        sd.mkdir(mode=0o700)
        for i in range(files):
            p = sd / f"{i:012x}-bash.txt"
            os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
            if i % 2 == 0:
                os.utime(p, (old, old))


def best_interleaved(fns: dict[str, Callable[[], object]], rounds: int = 3) -> dict[str, float]:
    out = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            out[k] = min(out[k], time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dirs", type=int, default=1000)
    ap.add_argument("--files", type=int, default=100)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="spillscope-bench-sweep-"))
    try:
        root = base / "root"
        build(root, args.dirs, args.files)
        cut = cutoff_ms(30 * MS_PER_DAY)
        t = best_interleaved({
            "scan": lambda: scan_root(str(root)),
            "dry": lambda: sweep_spill_roots([SweepRoot(str(root), False)], cut, lambda m: None, dry_run=True),
            "inspect": lambda: inspect_root(root, check_content=False),
            "forecast": lambda: inspect_root(root, retention_seconds=30 * 86400, check_content=False),
        })
        n = args.dirs * args.files
        print(f"{n} files in {args.dirs} session dirs")
        print(f"  baseline scan_root             {t['scan']:.3f} s  1.00x")
        print(f"  sweep dry run (prune)          {t['dry']:.3f} s  {t['dry'] / t['scan']:.2f}x scan")
        print(f"  inspect_root                   {t['inspect']:.3f} s  1.00x")
        print(f"  inspect_root + forecast (30d)  {t['forecast']:.3f} s  {t['forecast'] / t['inspect']:.2f}x inspect_root")
        start = time.perf_counter()
        report = sweep_spill_roots([SweepRoot(str(root), False)], cut, lambda m: None)
        took = time.perf_counter() - start
        print(f"  sweep --apply: deleted {len(report.files())} files in {took:.3f} s ({took / t['scan']:.2f}x scan)")
    finally:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
