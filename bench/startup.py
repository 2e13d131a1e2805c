#!/usr/bin/env python3
"""Start-up of ``spillscope grep x EMPTY_DIR``, process start to exit (issue 26: under 0.1 s),
against baselines measured in the same run: ``python -c pass``, ``python -S -c pass`` and,
if ``rg`` is on PATH (``pip install -r bench/requirements.txt``), ``rg x EMPTY_DIR``.

    python bench/startup.py                       # 40 rounds
    python bench/startup.py --runs 100 --compare /path/to/other/src   # also another checkout

Each round runs every command once, in turn, so a change of load hits all of them alike;
each run is a fresh process timed from fork to exit. Printed: best and median of each, the
ratios to the baselines, and the load average before and after (a shared machine is noisy:
the best is what the code costs, the median what a user waits under that load).

Bytecode: an installed package runs from its cached bytecode, so the runs do too (a first
run writes the cache; ``PYTHONDONTWRITEBYTECODE`` is dropped for the children). With
``--no-bytecode-cache`` spillscope's modules are compiled from source on every run instead
(a copy of each package without ``__pycache__``, ``PYTHONDONTWRITEBYTECODE=1``; the standard
library keeps its cache), as in a checkout run with ``PYTHONDONTWRITEBYTECODE=1`` set.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed_run(argv: list[str], env: dict[str, str], expect: int) -> float:
    t = time.perf_counter()
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - t
    if proc.returncode != expect:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}, expected {expect}\n{proc.stderr.decode(errors='replace')}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40, help="rounds (each runs every command once; default 40)")
    ap.add_argument("--compare", metavar="SRC", action="append", default=[],
                    help="also time the spillscope package under SRC (PYTHONPATH=SRC), e.g. an older checkout's src")
    ap.add_argument("--no-bytecode-cache", action="store_true", help="compile every module on every run")
    args = ap.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    scratch = Path(tempfile.mkdtemp(prefix="spillscope-startup-"))
    empty = scratch / "empty"
    empty.mkdir()
    py = sys.executable
    import spillscope  # where the package under test is (an editable install: the checkout's src)

    sources = [("spillscope grep x EMPTY", str(Path(spillscope.__file__).resolve().parent.parent))]
    sources += [(f"spillscope grep ({src})", os.path.abspath(src)) for src in args.compare]
    if args.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for i, (label, src) in enumerate(sources):  # a copy without __pycache__, never written to
            copy = scratch / f"src{i}"
            shutil.copytree(Path(src) / "spillscope", copy / "spillscope", ignore=shutil.ignore_patterns("__pycache__"))
            sources[i] = (label, str(copy))
    # (label, argv, extra environment, the exit status it must end with: grep and rg find nothing)
    commands: list[tuple[str, list[str], dict[str, str], int]] = [
        (label, [py, "-m", "spillscope", "grep", "x", str(empty)], {"PYTHONPATH": src}, 1) for label, src in sources]
    commands += [("python -c pass", [py, "-c", "pass"], {}, 0), ("python -S -c pass", [py, "-S", "-c", "pass"], {}, 0)]
    rg = shutil.which("rg") or shutil.which("rg", path=str(Path(py).parent))
    if rg is not None:
        commands.append(("rg x EMPTY", [rg, "x", str(empty)], {}, 1))
    else:
        print("rg not found: pip install -r bench/requirements.txt for that baseline")

    load_before = os.getloadavg()
    times: dict[str, list[float]] = {label: [] for label, *_ in commands}
    try:
        for label, argv, extra, expect in commands:  # a first run writes the bytecode cache
            timed_run(argv, {**env, **extra}, expect)
        for _ in range(args.runs):
            for label, argv, extra, expect in commands:
                times[label].append(timed_run(argv, {**env, **extra}, expect))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load_after = os.getloadavg()

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.runs} rounds, {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}, bytecode {'not cached' if args.no_bytecode_cache else 'cached'}")
    print("load average before: {:.2f} {:.2f} {:.2f}; after: {:.2f} {:.2f} {:.2f}".format(*load_before, *load_after))
    best = {label: min(ts) for label, ts in times.items()}
    median = {label: statistics.median(ts) for label, ts in times.items()}
    baselines = [label for label, *_ in commands if not label.startswith("spillscope")]
    print(f"{'command':<40} {'best':>8} {'median':>8}   " + "   ".join(f"/ {b} (best, median)" for b in baselines))
    for label, *_ in commands:
        ratios = "   ".join(f"{best[label] / best[b]:>6.2f}x {median[label] / median[b]:>6.2f}x".ljust(len(f"/ {b} (best, median)"))
                           for b in baselines)
        print(f"{label:<40} {best[label]:>7.3f}s {median[label]:>7.3f}s   {ratios}")
    grep = "spillscope grep x EMPTY"
    verdict = "met" if median[grep] < 0.1 else "met by the best run only" if best[grep] < 0.1 else "NOT met"
    print(f"goal: under 0.1 s: {verdict} (best {best[grep]:.3f} s, median {median[grep]:.3f} s); "
          f"above python -c pass: best {best[grep] - best['python -c pass']:.3f} s, "
          f"median {median[grep] - median['python -c pass']:.3f} s")


if __name__ == "__main__":
    main()
